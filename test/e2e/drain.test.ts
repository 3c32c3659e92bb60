// SIGTERM under load, on every door of one `dpg serve` process (the short version of
// `npm run bench -- drain`, docs/reliability.md#drain): /readyz turns 503 at once, new connections
// are refused, no answer is cut mid-body, no request body reaches an upstream cut short, and the
// process exits 0 with nothing left for the grace timer to cut. Doors: forward proxy (routed Mask and Pseudonymise,
// intercepted HTTPS, pass-through, blind tunnel), reverse listener, /api/protect, /file/protect,
// gRPC. The transparent listener needs a network namespace: the bench covers it.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { bearerToken, CARD, makeDoors } from '../helpers/door-clients.ts';
import { drainCycle } from '../helpers/drain-cycle.ts';
import { upstreamPki } from '../proxy/helpers.ts';
import { MANIFESTS, startGateway } from './gateway-process.ts';
import { ROOT } from './serve-process.ts';

const SIGTERMS = 3;
const RATE = 150;
// Long enough that a busy shared machine finishes every exchange: nothing may be left to cut.
const GRACE_MS = 30_000;

let dir: string;
let servers: Server[] = [];
let incomplete = 0;
const ports: Record<'routed' | 'routedTls' | 'plain' | 'plainTls', number> = { routed: 0, routedTls: 0, plain: 0, plainTls: 0 };
let pki: ReturnType<typeof upstreamPki>;

/** Echoes bodies after 30 ms (so requests are in flight at the signal); counts bodies that ended early. */
function echo(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('close', () => {
    if (!req.complete) incomplete++;
  });
  req.on('end', () =>
    setTimeout(() => {
      const body = Buffer.concat(chunks);
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream', 'content-length': body.length });
      res.end(body);
    }, 30),
  );
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dpg-drain-'));
  pki = upstreamPki(dir);
  const make = (tls: boolean): Server => (tls ? (createHttpsServer({ cert: pki.certPem, key: pki.keyPem }, echo) as unknown as Server) : createHttpServer(echo));
  for (const [name, tls] of [['routed', false], ['routedTls', true], ['plain', false], ['plainTls', true]] as const) {
    const server = make(tls);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ports[name] = (server.address() as AddressInfo).port;
    servers.push(server);
  }
  const defaults = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8');
  const identity = defaults.slice(defaults.indexOf('\nidentity:') + 1, defaults.indexOf('\nkeys:') + 1);
  const route = (name: string, port: number, path: string, jobType: string): string =>
    `    - name: ${name}\n      match: { host: 127.0.0.1, port: ${port}, methods: [POST], path: "${path}", contentType: application/json }\n      request: { manifest: customer, jobType: ${jobType} }\n`;
  writeFileSync(
    join(dir, 'gateway.yaml'),
    `http: { listen: 127.0.0.1:0, shutdownGraceMs: ${GRACE_MS} }
grpc: { listen: 127.0.0.1:0 }
admin: { listen: 127.0.0.1:0 }
${identity}keys: { source: generated }
manifests: ${MANIFESTS}
proxy:
  enabled: true
  listen: 127.0.0.1:0
  upstreamCa: ${pki.caFile}
  routes:
${route('mask', ports.routed, '/mask/**', 'Mask')}${route('pseudonymise', ports.routed, '/pseudo/**', 'Pseudonymise')}${route('mask-tls', ports.routedTls, '/mask/**', 'Mask')}  reverse:
    - { listen: 127.0.0.1:0, upstream: "http://127.0.0.1:${ports.routed}" }
logging: { level: info }
`,
  );
});

after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  servers = [];
  rmSync(dir, { recursive: true, force: true });
});

test(`${SIGTERMS} SIGTERMs under load on every door: 503 at once, new connections refused, nothing cut, exit 0`, async () => {
  const totals = { ok: 0, refused: 0, reset: 0, cut: 0, status: 0, wrong: 0 };
  for (let i = 0; i < SIGTERMS; i++) {
    const gw = await startGateway(join(dir, 'gateway.yaml'), { DPG_DATA_DIR: join(dir, 'data') });
    const token = await bearerToken(gw.ports.http);
    const { doors, close } = makeDoors(
      {
        ports: { proxy: gw.ports.proxy, http: gw.ports.http, grpc: gw.ports.grpc },
        gatewayCaPem: readFileSync(join(dir, 'data', 'proxy-ca.pem'), 'utf8'),
        upstreamCaPem: pki.caPem,
        urls: {
          proxyMask: `http://127.0.0.1:${ports.routed}/mask/x`,
          proxyPseudonymise: `http://127.0.0.1:${ports.routed}/pseudo/x`,
          proxyTlsMask: `https://127.0.0.1:${ports.routedTls}/mask/x`,
          proxyPass: `http://127.0.0.1:${ports.plain}/pass/x`,
          proxyBlind: `https://127.0.0.1:${ports.plainTls}/pass/x`,
          reverseMask: `http://127.0.0.1:${gw.ports['proxy-reverse']}/mask/x`,
        },
      },
      () => token,
    );
    const shuttingDown = async (): Promise<void> => {
      while (!gw.logs.some((l) => l.includes('"msg":"shutting down"'))) await new Promise((r) => setTimeout(r, 2));
    };
    const exited = new Promise<number | null>((resolve) => (gw.child.exitCode !== null ? resolve(gw.child.exitCode) : gw.child.once('exit', (code) => resolve(code))));
    const r = await drainCycle({
      doors,
      rate: RATE,
      loadMs: 700,
      signal: () => gw.child.kill('SIGTERM'),
      shuttingDown,
      exited,
      adminPort: gw.ports.admin,
      httpPort: gw.ports.http,
    });
    await close();
    const detail = JSON.stringify({ cycle: i, counts: r.counts, failures: r.failures, exitMs: Math.round(r.exitMs), log: gw.logs.slice(gw.logs.findIndex((l) => l.includes('shutting down'))).filter((l) => !l.includes('"audit":true')) });
    assert.equal(r.exitCode, 0, detail);
    assert.equal(r.readyzAfterSignal, 503, detail);
    assert.equal(r.newConnectionAfterSignal, 'refused', detail);
    // Everything in flight finished by itself: the grace timer had nothing to cut.
    assert.ok(!gw.logs.some((l) => l.includes('grace period over')), detail);
    assert.equal(r.counts.cut, 0, detail);
    assert.equal(r.counts.wrong, 0, detail);
    assert.equal(r.counts.status, 0, detail);
    assert.ok(r.counts.ok >= doors.length, detail);
    for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r.counts[k];
    // Nothing personal in the gateway's log, shutdown lines included. The card in any writing the
    // doors send it, whole or in part (a bare '4111' also matches ports, ids and sizes, and once did).
    // Any two of its groups together count: a partial card in an error snippet is a leak too.
    const leaked = gw.logs.filter((l) => l.includes('4111 1111') || l.includes('1111 1111') || l.replace(/[\s-]/g, '').includes('41111111'));
    for (const l of gw.logs.filter((line) => line.includes('4111') && !leaked.includes(line))) {
      const at = l.indexOf('4111');
      console.log(`drain test: '4111' in a log line, not the card: …${l.slice(Math.max(0, at - 40), at + 20)}…`);
    }
    assert.equal(leaked.length, 0, `a card number reached the log in ${leaked.length} line(s): ${leaked.map((l) => l.replaceAll(CARD, '[CARD]').slice(0, 300)).join(' | ')}`);
  }
  assert.equal(incomplete, 0, 'an upstream received a request body cut short');
  console.log(`drain test: ${SIGTERMS} SIGTERMs at ${RATE} req/s: ${JSON.stringify(totals)}`);
});
