// The two halves of gRPC egress together: a real gRPC route (a .proto file and the default
// `customer` manifest) on a proxy started as the gateway starts it, a grpc-js client through
// CONNECT (grpc_proxy) and a grpc-js server upstream. The upstream receives the selected fields
// pseudonymised and every other field as sent; the response phase (Reconstruct) gives the app its
// values back; unary and bidirectional streaming.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { startProxy, type RunningProxy } from '../../src/proxy/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { proxyConfig, route, tempDir, upstreamPki, type TestPki } from './helpers.ts';
import { grpcClientThroughProxy } from './http2-helpers.ts';

const PROTO = `syntax = "proto3";
package partner.v1;
message Customer {
  string name = 1;
  string email = 2;
  string card_number = 3;
  int64 id = 4;
  string plan = 5;
}
service Customers {
  rpc Put(Customer) returns (Customer);
  rpc Chat(stream Customer) returns (stream Customer);
}
`;

interface Customer {
  name: string;
  email: string;
  card_number: string;
  id: string;
  plan: string;
}

const JANE: Customer = { name: 'Jane Doe', email: 'jane.doe@example.com', card_number: '4111 1111 1111 1111', id: '42', plan: 'gold' };

describe('a gRPC route end to end: grpc-js through CONNECT, fields protected on the way out and restored on the way back', { timeout: 60_000 }, () => {
  let pki: TestPki;
  let server: grpc.Server;
  let port: number;
  let proxy: RunningProxy;
  const received: Customer[] = [];
  const logs: string[] = [];
  let Customers: grpc.ServiceClientConstructor;

  before(async () => {
    const dir = tempDir();
    const protoFile = join(dir, 'partner.proto');
    writeFileSync(protoFile, PROTO);
    const definition = protoLoader.loadSync(protoFile, { keepCase: true, longs: String, defaults: true });
    const pkg = grpc.loadPackageDefinition(definition) as unknown as { partner: { v1: { Customers: grpc.ServiceClientConstructor } } };
    Customers = pkg.partner.v1.Customers;
    pki = upstreamPki(tempDir());
    server = new grpc.Server();
    server.addService(Customers.service, {
      // The partner stores what it got and answers with it.
      Put: (call: grpc.ServerUnaryCall<Customer, Customer>, cb: grpc.sendUnaryData<Customer>) => {
        received.push(call.request);
        cb(null, call.request);
      },
      Chat: (call: grpc.ServerDuplexStream<Customer, Customer>) => {
        call.on('data', (c: Customer) => {
          received.push(c);
          call.write(c);
        });
        call.on('end', () => call.end());
        call.on('error', () => undefined);
      },
    });
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(pki.certPem), private_key: Buffer.from(pki.keyPem) }]), (err, p) => (err ? reject(err) : resolve(p))),
    );
    proxy = await startProxy({
      config: proxyConfig({
        upstreamCa: pki.caFile,
        routes: [
          route('partner-grpc', {
            match: { host: '127.0.0.1', port, path: '/partner.v1.Customers/*' },
            grpc: { protoFiles: [protoFile] },
            request: { manifest: 'customer', jobType: 'Pseudonymise' },
            response: { manifest: 'customer', jobType: 'Reconstruct' },
          }),
        ],
      }),
      dataDir: tempDir(),
      engine: testEngine(),
      logger: createLogger({ level: 'info', destination: new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString('utf8')), cb()) }) }),
      metrics: new Metrics({ collectDefaults: false }),
    });
  });
  after(async () => {
    await proxy?.close(500);
    server?.forceShutdown();
  });

  const client = (): grpc.Client => grpcClientThroughProxy(Customers, port, proxy);

  const assertProtected = (got: Customer, sent: Customer): void => {
    assert.notEqual(got.name, sent.name);
    assert.equal(got.name.length, sent.name.length);
    assert.notEqual(got.email, sent.email);
    assert.match(got.email, /@example\.com$/);
    assert.notEqual(got.card_number, sent.card_number);
    assert.match(got.card_number, /^\d{4} \d{4} \d{4} \d{4}$/);
    assert.equal(got.id, sent.id, 'fields the manifest does not select arrive as sent');
    assert.equal(got.plan, sent.plan);
  };

  test('unary: the upstream gets pseudonyms, the app gets its own values back', async () => {
    const c = client();
    try {
      const before = received.length;
      const reply = await new Promise<Customer>((resolve, reject) =>
        (c as unknown as { Put: (m: Customer, cb: (e: grpc.ServiceError | null, r?: Customer) => void) => void }).Put(JANE, (err, r) => (err ? reject(err) : resolve(r!))),
      );
      assert.equal(received.length, before + 1);
      assertProtected(received[before]!, JANE);
      assert.deepEqual(reply, JANE, 'Reconstruct restored every value exactly');
      // The call's audit line (written when its stream closes) counts both directions: 3 values each way.
      for (let i = 0; i < 100 && !logs.some((l) => l.includes('"route":"partner-grpc"')); i++) await new Promise((r) => setTimeout(r, 20));
      const line = JSON.parse(logs.find((l) => l.includes('"route":"partner-grpc"'))!) as { outcome: string; valuesProtected: number; valuesFailed: number };
      assert.deepEqual([line.outcome, line.valuesProtected, line.valuesFailed], ['ok', 6, 0]);
      assert.ok(!logs.join('').includes('jane.doe') && !logs.join('').includes('4111'), 'no value in the logs');
    } finally {
      c.close();
    }
  });

  test('bidirectional streaming: each message protected as it passes and restored on its way back', async () => {
    const c = client();
    try {
      const before = received.length;
      const call = (c as unknown as { Chat: () => grpc.ClientDuplexStream<Customer, Customer> }).Chat();
      const sent = [0, 1, 2].map((i) => ({ ...JANE, name: `Jane Doe${'e'.repeat(i)}`, id: String(100 + i) }));
      const replies: Customer[] = [];
      const done = new Promise<void>((resolve, reject) => {
        call.on('data', (r: Customer) => replies.push(r));
        call.on('end', resolve);
        call.on('error', reject);
      });
      for (const m of sent) call.write(m);
      call.end();
      await done;
      assert.deepEqual(replies, sent);
      const got = received.slice(before);
      assert.equal(got.length, 3);
      got.forEach((g, i) => assertProtected(g, sent[i]!));
    } finally {
      c.close();
    }
  });
});
