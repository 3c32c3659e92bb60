// Property test of "every request on a captured connection is read" (issue 16, class 8): seeded
// random sequences of pipelined requests on one plain connection — unrouted and routed hosts, GET,
// HEAD and POST, bodies of random sizes, the byte stream cut at random points and sent in pieces —
// through the real transparent listener. Whatever the sequence and the cuts: every request reaches
// the upstream once; every routed body arrives masked; every unrouted one untouched; the
// app gets one answer per request.

import assert from 'node:assert/strict';
import { connect as netConnect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { rng } from '../../helpers/rng.ts';
import { CARD, route, startUpstream, type Upstream } from '../helpers.ts';
import { startTransparentProxy, type TransparentProxy } from './helpers.ts';

const MASKED = '************1111';
const CASES = 25;

interface Planned {
  readonly host: string;
  readonly method: 'GET' | 'HEAD' | 'POST';
  readonly marker: string;
}

describe('relay property: random pipelined sequences on one connection', () => {
  let http: Upstream;
  let tp: TransparentProxy;

  before(async () => {
    http = await startUpstream();
    tp = await startTransparentProxy({ routes: [route('r', { match: { host: 'api.partner.test', port: http.port }, request: { manifest: 'customer', jobType: 'Mask' } })] });
  });
  after(async () => {
    await tp.close();
    await http.close();
  });

  for (let seed = 1; seed <= CASES; seed++) {
    test(`seed ${seed}`, async () => {
      const random = rng(seed * 7919);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
      const count = 2 + Math.floor(random() * 5);
      const planned: Planned[] = [];
      let wire = '';
      for (let i = 0; i < count; i++) {
        const host = pick(['unrouted.test', 'other.test', 'api.partner.test', 'API.Partner.test']);
        const method = pick(['GET', 'HEAD', 'POST', 'POST'] as const);
        const marker = `s${seed}r${i}`;
        planned.push({ host, method, marker });
        const last = i === count - 1;
        const close = last ? 'Connection: close\r\n' : '';
        if (method === 'POST') {
          const body = JSON.stringify({ cardNumber: CARD, marker, pad: 'x'.repeat(Math.floor(random() * 3000)) });
          wire += `POST /v1/customers HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${close}\r\n${body}`;
        } else wire += `${method} /v1/customers?m=${marker} HTTP/1.1\r\nHost: ${host}\r\n${close}\r\n`;
      }
      const before = http.received.length;
      tp.redirectNext({ address: '127.0.0.1', port: http.port, family: 4 });
      const answer = await new Promise<string>((resolve) => {
        const s = netConnect(tp.port, '127.0.0.1');
        let got = '';
        s.on('data', (d) => (got += d.toString('latin1')));
        s.on('close', () => resolve(got));
        s.on('error', () => undefined);
        // The stream cut at random points, sent piece by piece.
        const bytes = Buffer.from(wire, 'latin1');
        let at = 0;
        const next = (): void => {
          if (at >= bytes.length) return;
          const size = 1 + Math.floor(random() * 400);
          s.write(bytes.subarray(at, at + size));
          at += size;
          setImmediate(next);
        };
        next();
      });
      assert.equal((answer.match(/HTTP\/1\.1 200/g) ?? []).length, count, `one answer per request: ${answer.slice(0, 200)}`);
      const got = http.received.slice(before);
      assert.equal(got.length, count, 'every request reached the upstream once');
      // The full path re-issues pipelined requests through the pool, concurrently: found by marker, not by order.
      const markerOf = (r: (typeof got)[number]): string =>
        r.method === 'POST' ? (JSON.parse(r.body.toString()) as { marker: string }).marker : new URL(r.url, 'http://x').searchParams.get('m') ?? '';
      assert.deepEqual(got.map(markerOf).sort(), planned.map((p) => p.marker).sort(), 'each request once');
      for (const p of planned) {
        const r = got.find((g) => markerOf(g) === p.marker)!;
        assert.equal(r.method, p.method);
        if (p.method !== 'POST') continue;
        const body = JSON.parse(r.body.toString()) as { cardNumber: string };
        assert.equal(body.cardNumber, p.host.toLowerCase() === 'api.partner.test' ? MASKED : CARD, `${p.marker} to ${p.host}`);
      }
    });
  }
});
