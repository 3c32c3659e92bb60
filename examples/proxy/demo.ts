// Runnable example of the egress sidecar: a fake partner API, the proxy with one route, and an
// "app" that reaches the partner through the forward proxy (HTTPS, intercepted) and through a
// reverse listener. Prints what the partner actually received. Everything stays on 127.0.0.1.
//
//   node --import ./scripts/ts-loader.mjs examples/proxy/demo.ts

import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProxyAgent, request } from 'undici';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { ensureDevKeyring, loadKeyringFile } from '../../src/crypto/keyring.ts';
import { createEngine } from '../../src/engine/engine.ts';
import { startProxy } from '../../src/proxy/index.ts';
import { createCertificate, encodeName, randomSerial } from '../../src/crypto/x509.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'dpg-proxy-demo-'));

// 1. A fake partner API over HTTPS, with its own (self-signed) certificate, that logs what it gets.
const partnerKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const partnerCert = createCertificate({
  subject: encodeName('partner.localhost'),
  publicKey: partnerKey.publicKey,
  selfSigningKey: partnerKey.privateKey,
  notBefore: new Date(Date.now() - 60_000),
  notAfter: new Date(Date.now() + 86_400_000),
  isCa: false,
  altNames: ['127.0.0.1'],
  serial: randomSerial(),
});
writeFileSync(join(dataDir, 'partner-ca.pem'), partnerCert.pem);
const partner = createServer({ cert: partnerCert.pem, key: partnerKey.privateKey.export({ type: 'pkcs8', format: 'pem' }) }, (req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    console.log(`  partner received ${req.method} ${req.url}: ${body}`);
    res.writeHead(201, { 'content-type': 'application/json' });
    res.end('{"status":"stored"}');
  });
});
await new Promise<void>((r) => partner.listen(0, '127.0.0.1', r));
const partnerPort = (partner.address() as AddressInfo).port;

// 2. The sidecar: one route masking customer data sent to the partner, one reverse listener.
const manifestsDir = fileURLToPath(new URL('../../config/manifests', import.meta.url));
const engine = createEngine({ manifestsDir, keyring: loadKeyringFile(ensureDevKeyring(dataDir)) });
const proxy = await startProxy({
  config: {
    enabled: true,
    listen: { host: '127.0.0.1', port: 0 },
    upstreamCa: join(dataDir, 'partner-ca.pem'),
    connectTimeoutMs: 2000,
    responseTimeoutMs: 5000,
    routes: [
      {
        name: 'partner-customers',
        match: { host: '127.0.0.1', port: partnerPort, methods: ['POST', 'PUT'], path: '/v1/customers/**', contentType: 'application/json' },
        request: { manifest: 'customer', jobType: 'Mask' },
        onError: 'reject',
        maxBodyBytes: 1024 * 1024,
      },
    ],
    reverse: [{ listen: { host: '127.0.0.1', port: 0 }, upstream: `https://127.0.0.1:${partnerPort}` }],
  },
  dataDir,
  engine,
  logger: createLogger({ level: 'warn' }),
  metrics: new Metrics({ collectDefaults: false }),
});
console.log(`sidecar: HTTP_PROXY=http://127.0.0.1:${proxy.address.port}  CA: ${join(dataDir, 'proxy-ca.pem')}`);

const customer = JSON.stringify({ name: 'Ada Lovelace', email: 'ada.lovelace@example.com', cardNumber: '4111 1111 1111 1111', plan: 'gold' });

// 3a. An app that honours HTTPS_PROXY and trusts the gateway CA (what curl/Go/Python/Java do).
console.log('app → forward proxy (CONNECT, TLS intercepted):');
const viaProxy = new ProxyAgent({ uri: `http://127.0.0.1:${proxy.address.port}`, requestTls: { ca: proxy.caPem } });
const a = await request(`https://127.0.0.1:${partnerPort}/v1/customers/42`, {
  dispatcher: viaProxy,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: customer,
});
console.log(`  app got ${a.statusCode} ${await a.body.text()} (x-request-id ${String(a.headers['x-request-id'])})`);

// 3b. A Node.js 20 app (fetch ignores HTTP_PROXY): point its base URL at the reverse listener.
console.log('app → reverse listener (plain HTTP on localhost, HTTPS to the partner):');
const b = await request(`http://127.0.0.1:${proxy.reverse[0].port}/v1/customers/43`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: customer,
});
console.log(`  app got ${b.statusCode} ${await b.body.text()}`);

// 3c. Traffic no route matches passes untouched.
console.log('app → unrouted path (untouched):');
const c = await request(`http://127.0.0.1:${proxy.reverse[0].port}/v1/health`, { method: 'POST', body: 'ping' });
console.log(`  app got ${c.statusCode}`);

await viaProxy.close();
await proxy.close(1000);
partner.close();
