// Issue 18 item 1 on the gRPC door (real listener, real client): a large ProtectValues batch is
// protected in a protection worker with the very result the inline engine gives, light batches
// start no worker, and a worker that crashes answers UNAVAILABLE with code WORKER_FAILED.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type * as grpc from '@grpc/grpc-js';
import { createEngine, type ProtectionEngine } from '../../../src/engine/engine.ts';
import { DEFAULT_MANIFESTS, testEngine, testKeyring } from '../../helpers/engine.ts';
import { createClient, expectFailure, protectValues, toRows } from './client.ts';
import { startGrpcTestGateway, type GrpcTestGateway } from './gateway.ts';

let engine: ProtectionEngine;
let gw: GrpcTestGateway;
let client: grpc.Client;
let token: string;

const LABELS = ['name', 'email', 'cardNumber', 'note'];
const rowsOf = (n: number, note = 'keep') => Array.from({ length: n }, (_, i) => [`Jane Doe${i}`, `jane${i}@example.com`, '4111 1111 1111 1111', note]);
const config = { configuration_name: 'customer', job_type: 'Pseudonymise' };

before(async () => {
  // The worker's test hook (src/engine/protect-worker.ts) reads these when it starts.
  process.env.NODE_ENV = 'test';
  process.env.DPG_TEST_WORKER_FAULT = '1';
  engine = createEngine({ manifestsDir: DEFAULT_MANIFESTS, keyring: testKeyring(), limits: { workers: { max: 1, inlineBytes: 2048, timeoutMs: 60_000, idleMs: 60_000 } } });
  gw = await startGrpcTestGateway({ engine });
  client = createClient(gw.port);
  token = await gw.token('full');
});
after(async () => {
  client?.close();
  await gw?.close();
  await engine?.close();
});

describe('ProtectValues through protection workers', () => {
  test('a light batch stays inline: no worker', async () => {
    const res = await protectValues(client, { job_config: config, labels: LABELS, rows: toRows(rowsOf(3)) }, token);
    assert.equal(res.rows.length, 3);
    assert.equal(engine.workerStats().started, 0);
  });

  test('a large batch runs in a worker and answers what the inline engine answers', async () => {
    const rows = rowsOf(400);
    const res = await protectValues(client, { request_id: 'req-big-1', job_config: config, labels: LABELS, rows: toRows(rows) }, token);
    assert.equal(engine.workerStats().started, 1);
    const inline = testEngine().protectRows({ manifestName: 'customer', jobType: 'Pseudonymise', dataSetType: 'JSON', context: { requestId: 'x' } }, LABELS, rows, 'FILE');
    assert.deepEqual(res.rows, inline.rows);
    assert.equal(res.trailers['dpg-values-protected'], String(inline.summary.protected));
  });

  test('a crashed worker: UNAVAILABLE, WORKER_FAILED; the next large batch passes', async () => {
    const failure = await expectFailure(protectValues(client, { job_config: config, labels: LABELS, rows: toRows(rowsOf(400, 'dpg-test-worker-crash')) }, token));
    assert.equal(failure.code, 14, failure.details);
    assert.equal(failure.trailers['dpg-error-code'], 'WORKER_FAILED', JSON.stringify(failure));
    assert.ok(!failure.details.includes('Jane'), failure.details);
    const res = await protectValues(client, { job_config: config, labels: LABELS, rows: toRows(rowsOf(400)) }, token);
    assert.equal(res.rows.length, 400);
    assert.equal(engine.workerStats().started, 2);
    for (const line of gw.logs) assert.ok(!line.includes('Jane Doe'), line);
  });
});
