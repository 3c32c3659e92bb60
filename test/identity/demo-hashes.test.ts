// The demo credentials of the shipped config are recognised by their hash strings (no scrypt at
// start), and those strings really are hashes of the published demo secrets.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { DEMO_API_KEY, DEMO_CLIENT_SECRETS, SHIPPED_DEMO_HASHES } from '../../src/identity/identity.ts';
import { verifySecret } from '../../src/identity/secret-hash.ts';

test('config/gateway.yaml ships exactly the demo hashes identity.ts recognises, and they verify', async () => {
  const { config, problems } = loadConfig({ file: 'config/gateway.yaml', env: {} });
  assert.ok(config, JSON.stringify(problems));
  const shipped = [...config.identity.apiKeys.map((k) => k.hash), ...config.identity.clients.map((c) => c.secretHash)];
  assert.deepEqual(new Set(shipped), SHIPPED_DEMO_HASHES);
  assert.equal(await verifySecret(DEMO_API_KEY, config.identity.apiKeys[0].hash), true);
  for (const client of config.identity.clients) {
    const matches = await Promise.all(DEMO_CLIENT_SECRETS.map((s) => verifySecret(s, client.secretHash)));
    assert.equal(matches.filter(Boolean).length, 1, client.id);
  }
});
