// close(): in-flight exchanges (also inside intercepted TLS tunnels) finish, idle keep-alive
// connections are dropped at once, and close does not wait for the grace period needlessly.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProxyAgent, request } from 'undici';
import { CARD, proxyConfig, route, startTestProxy, startUpstream, tempDir, upstreamPki } from './helpers.ts';

test('close lets an in-flight intercepted exchange finish and drops idle connections promptly', async () => {
  const pki = upstreamPki(tempDir());
  const up = await startUpstream({
    tls: pki,
    handler: (_req, res, body) => setTimeout(() => res.end(body), 300),
  });
  const p = await startTestProxy(
    proxyConfig({ upstreamCa: pki.caFile, routes: [route('m', { match: { port: up.port }, request: { manifest: 'customer', jobType: 'Mask' } })] }),
  );
  const agent = new ProxyAgent({ uri: p.url, requestTls: { ca: p.proxy.caPem } });
  try {
    const post = () =>
      request(`${up.origin}/x`, { dispatcher: agent, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cardNumber: CARD }) });
    await (await post()).body.text(); // leaves an idle keep-alive tunnel behind
    const inFlight = post();
    await new Promise((r) => setTimeout(r, 100));
    const started = performance.now();
    const closing = p.proxy.close(5000);
    const res = await inFlight;
    assert.equal(res.statusCode, 200);
    assert.deepEqual(JSON.parse(await res.body.text()), { cardNumber: '************1111' });
    await closing;
    assert.ok(performance.now() - started < 2000, 'close waited for the grace period');
  } finally {
    await agent.close();
    await up.close();
  }
});
