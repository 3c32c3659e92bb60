// The pieces of live reconfiguration that need no process: which settings wait for a restart, and
// that a retired generation's engine is closed only after its last request.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.ts';
import { effectiveConfig } from '../../src/reload/restart-only.ts';
import { ConfigGeneration } from '../../src/reload/generation.ts';
import type { ProtectionEngine } from '../../src/engine/engine.ts';

describe('reload', () => {
  it('keeps the running values of restart-only settings and names them', () => {
    const running = loadConfig({ file: 'config/gateway.yaml', env: {} }).config!;
    const next = {
      ...running,
      http: { ...running.http, listen: { host: '127.0.0.1', port: 1 } },
      proxy: { ...running.proxy, listen: { host: '127.0.0.1', port: 2 }, routes: [], connectTimeoutMs: 5 },
    };
    const { config, restartNeeded } = effectiveConfig(running, next);
    assert.deepEqual([...restartNeeded].sort(), ['http', 'proxy.listen']);
    assert.deepEqual(config.http, running.http);
    assert.deepEqual(config.proxy.listen, running.proxy.listen);
    assert.equal(config.proxy.connectTimeoutMs, 5, 'live settings take the new value');
    assert.deepEqual(effectiveConfig(running, running).restartNeeded, []);
  });

  it('closes a retired generation\'s engine once its last request has left', async () => {
    let closed = 0;
    const engine = { close: async () => void closed++ } as unknown as ProtectionEngine;
    const g = new ConfigGeneration(1, loadConfig({ file: 'config/gateway.yaml', env: {} }).config!, engine);
    const leaveA = g.enter();
    const leaveB = g.enter();
    const retired = g.retire();
    leaveA();
    leaveA(); // leaving twice counts once
    await new Promise((r) => setImmediate(r));
    assert.equal(closed, 0, 'a request is still running');
    leaveB();
    await retired;
    assert.equal(closed, 1);
  });
});
