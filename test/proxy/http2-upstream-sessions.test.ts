// The upstream side of routed gRPC calls (src/proxy/http2/upstream-sessions.ts): one HTTP/2
// session per upstream origin carries every call to it, whether the calls come at once or one
// after another, and its socket has Nagle's algorithm off (node:http2 sets it; this guards it): the
// gateway writes each unary call to the upstream in two pieces (`ss` counts 2.0 data segments per
// call), and with Nagle on the second would wait for the upstream's delayed ACK, which a unary
// server, waiting for the rest of the call, holds back. Counts and flags only, never times.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { createSecureContext } from 'node:tls';
import type { Target } from '../../src/proxy/exchange/exchange.ts';
import { UpstreamSessions } from '../../src/proxy/http2/upstream-sessions.ts';
import { tempDir, upstreamPki, type TestPki } from './helpers.ts';
import { startH2Upstream, type H2Upstream } from './http2-helpers.ts';

/** net.Socket's own record of setNoDelay (Node keeps it in this symbol; there is no public getter). */
const NO_DELAY = Object.getOwnPropertySymbols(new Socket()).find((s) => s.description === 'kSetNoDelay');

describe('upstream HTTP/2 sessions for gRPC calls', { timeout: 20_000 }, () => {
  let pki: TestPki;
  const upstreams: H2Upstream[] = [];
  let sessions: UpstreamSessions;

  before(async () => {
    pki = upstreamPki(tempDir());
    upstreams.push(await startH2Upstream({ tls: pki }), await startH2Upstream({ tls: pki }));
    sessions = new UpstreamSessions({ roots: createSecureContext({ ca: pki.caPem }), connectTimeoutMs: 5000 });
  });
  after(async () => {
    sessions.close();
    for (const u of upstreams) await u.close();
  });

  const targetOf = (u: H2Upstream): Target => ({ scheme: 'https', host: '127.0.0.1', port: u.port, path: '/test.Echo/Unary' });
  /** One call on the target's session: resolves with the body the upstream echoed. */
  const call = (target: Target, body: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const stream = sessions.sessionFor(target).request({ ':method': 'POST', ':path': target.path, ':authority': `127.0.0.1:${target.port}`, 'content-type': 'application/grpc' });
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', reject);
      stream.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
      stream.end(body);
    });

  test('one session per upstream: 20 calls at once, then 20 one after another, share it; another upstream gets its own', async () => {
    const [a, b] = upstreams as [H2Upstream, H2Upstream];
    const seen = new Set(Array.from({ length: 5 }, () => sessions.sessionFor(targetOf(a))));
    assert.equal(seen.size, 1, 'the same session object for every call to one origin');
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => call(targetOf(a), `at once ${i}`)));
    assert.deepEqual(replies, Array.from({ length: 20 }, (_, i) => `at once ${i}`));
    for (let i = 0; i < 20; i++) assert.equal(await call(targetOf(a), `in turn ${i}`), `in turn ${i}`);
    assert.equal(await call(targetOf(b), 'other'), 'other');
    assert.equal(a.sessions(), 1, 'sessions the first upstream accepted');
    assert.equal(a.received.length, 40);
    assert.equal(b.sessions(), 1, 'sessions the second upstream accepted');
  });

  test("the session's socket has Nagle's algorithm off", async () => {
    assert.ok(NO_DELAY !== undefined, "this Node keeps no kSetNoDelay symbol on sockets: the test must read Nagle's state another way");
    const [a] = upstreams as [H2Upstream];
    await call(targetOf(a), 'warm');
    const socket = sessions.sessionFor(targetOf(a)).socket as unknown as Record<symbol, unknown>;
    assert.equal(socket[NO_DELAY], true);
  });
});
