// Whole-process tests of the gRPC listener itself: TLS and mutual TLS, the configured limits,
// health Watch and shutdown. Certificates are minted with the openssl CLI when it is installed.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createClient, expectFailure, HealthClient, protectValues, toRows } from '../transport/grpc/client.ts';
import { startGrpcTestGateway, type GrpcTestGateway } from '../transport/grpc/gateway.ts';

const MASK = { configuration_name: 'customer', job_type: 'Mask' };

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A self-signed P-256 certificate for 127.0.0.1 / localhost, valid one day. */
function selfSigned(dir: string, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}-key.pem`);
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
      '-subj', `/CN=${name}`, '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

const opensslMissing = hasOpenssl() ? false : 'the openssl CLI is not installed, so no test certificate can be minted';

describe('TLS', { skip: opensslMissing }, () => {
  let dir: string;
  let server: { cert: string; key: string };
  let clientCert: { cert: string; key: string };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'dpg-grpc-tls-'));
    server = selfSigned(dir, 'server');
    clientCert = selfSigned(dir, 'client');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('serves TLS when a certificate and key are configured; plaintext clients cannot talk to it', async () => {
    const gw = await startGrpcTestGateway({ grpc: { tls: { cert: server.cert, key: server.key } } });
    const tlsClient = createClient(gw.port, grpc.credentials.createSsl(readFileSync(server.cert)));
    const plainClient = createClient(gw.port);
    try {
      const res = await protectValues(tlsClient, { job_config: MASK, labels: ['cardNumber'], rows: toRows([['4111 1111 1111 1111']]) }, await gw.token('full'));
      assert.deepEqual(res.rows, [['**** **** **** 1111']]);
      const f = await expectFailure(protectValues(plainClient, { job_config: MASK, labels: ['cardNumber'], rows: toRows([['1']]) }, await gw.token('full')));
      assert.equal(f.code, grpc.status.UNAVAILABLE);
    } finally {
      tlsClient.close();
      plainClient.close();
      await gw.close();
    }
  });

  test('with grpc.tls.ca, clients must present a certificate signed by it (mutual TLS)', async () => {
    const gw = await startGrpcTestGateway({ grpc: { tls: { cert: server.cert, key: server.key, ca: clientCert.cert } } });
    const ca = readFileSync(server.cert);
    const withCert = createClient(gw.port, grpc.credentials.createSsl(ca, readFileSync(clientCert.key), readFileSync(clientCert.cert)));
    const withoutCert = createClient(gw.port, grpc.credentials.createSsl(ca));
    try {
      const token = await gw.token('full');
      const ok = await protectValues(withCert, { job_config: MASK, labels: ['cardNumber'], rows: toRows([['4111 1111 1111 1111']]) }, token);
      assert.deepEqual(ok.rows, [['**** **** **** 1111']]);
      const f = await expectFailure(protectValues(withoutCert, { job_config: MASK, labels: ['cardNumber'], rows: toRows([['1']]) }, token));
      assert.equal(f.code, grpc.status.UNAVAILABLE);
    } finally {
      withCert.close();
      withoutCert.close();
      await gw.close();
    }
  });

  test('an unreadable certificate file fails start-up with the path, not the content', async () => {
    await assert.rejects(
      startGrpcTestGateway({ grpc: { tls: { cert: join(dir, 'missing.pem'), key: server.key } } }),
      /grpc\.tls: cannot read the certificate file .*missing\.pem/,
    );
  });
});

describe('limits', () => {
  let gw: GrpcTestGateway;
  let client: grpc.Client;
  let token: string;
  before(async () => {
    gw = await startGrpcTestGateway({ limits: { maxRows: 3, maxValueLength: 40 }, grpc: { maxMessageBytes: 4096 } });
    client = createClient(gw.port);
    token = await gw.token('full');
  });
  after(async () => {
    client.close();
    await gw.close();
  });

  test('more rows than limits.maxRows is RESOURCE_EXHAUSTED / PAYLOAD_TOO_LARGE', async () => {
    const ok = await protectValues(client, { job_config: MASK, labels: ['name'], rows: toRows([['A'], ['B'], ['C']]) }, token);
    assert.equal(ok.rows.length, 3);
    const f = await expectFailure(protectValues(client, { job_config: MASK, labels: ['name'], rows: toRows([['A'], ['B'], ['C'], ['D']]) }, token));
    assert.equal(f.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(f.trailers['dpg-error-code'], 'PAYLOAD_TOO_LARGE');
    assert.match(f.details, /maxRows/);
  });

  test('a value longer than limits.maxValueLength is RESOURCE_EXHAUSTED naming its cell', async () => {
    const f = await expectFailure(protectValues(client, { job_config: MASK, labels: ['name', 'note'], rows: toRows([['A', 'ok'], ['B', 'y'.repeat(41)]]) }, token));
    assert.equal(f.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(f.trailers['dpg-error-code'], 'PAYLOAD_TOO_LARGE');
    assert.match(f.details, /rows\[1\]\.columns\[1\] \(note\)/);
    assert.ok(!f.details.includes('yyy'));
  });

  test('a message over grpc.maxMessageBytes is refused by the transport with RESOURCE_EXHAUSTED', async () => {
    const f = await expectFailure(protectValues(client, { job_config: MASK, labels: ['note'], rows: toRows([['z'.repeat(5000)]]) }, token));
    assert.equal(f.code, grpc.status.RESOURCE_EXHAUSTED);
  });
});

describe('health Watch and shutdown', () => {
  test('Watch streams the status and its changes; close() ends open streams and returns promptly', async () => {
    const gw = await startGrpcTestGateway();
    const health = new HealthClient(`127.0.0.1:${gw.port}`, grpc.credentials.createInsecure());
    const seen: string[] = [];
    const stream = (health as unknown as Record<string, Function>).Watch.call(health, { service: '' }) as grpc.ClientReadableStream<{ status: string }>;
    const ended = new Promise<void>((resolve) => {
      stream.on('end', () => resolve());
      stream.on('error', () => resolve());
    });
    const next = (): Promise<string> => new Promise((resolve) => stream.once('data', (m: { status: string }) => resolve(m.status)));
    try {
      seen.push(await next());
      gw.ready = false;
      seen.push(await next());
      const t = Date.now();
      const last = next();
      await gw.close();
      seen.push(await last);
      await ended;
      assert.ok(Date.now() - t < 1000, 'close() is not held up by the Watch stream');
      assert.deepEqual(seen, ['SERVING', 'NOT_SERVING', 'NOT_SERVING']);
    } finally {
      health.close();
    }
  });

  test('Watch of an unknown service reports SERVICE_UNKNOWN', async () => {
    const gw = await startGrpcTestGateway();
    const health = new HealthClient(`127.0.0.1:${gw.port}`, grpc.credentials.createInsecure());
    try {
      const stream = (health as unknown as Record<string, Function>).Watch.call(health, { service: 'nope' }) as grpc.ClientReadableStream<{ status: string }>;
      const status = await new Promise<string>((resolve) => stream.once('data', (m: { status: string }) => resolve(m.status)));
      assert.equal(status, 'SERVICE_UNKNOWN');
      stream.on('error', () => {}); // cancelling surfaces as a CANCELLED error on the client stream
      stream.cancel();
    } finally {
      health.close();
      await gw.close();
    }
  });
});
