// Issue 18 item 1, engine side: a document or table protected in a protection worker comes back
// byte for byte as inline (every data type, a gRPC table), light work never starts a worker, idle
// workers are reaped, and a worker's failure is WORKER_FAILED. Workers here run from the sources
// (scripts/ts-loader.mjs reaches them through the inherited --import); test/e2e/workers.test.ts
// drives the built dist/ through real listeners.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDevKeyring, loadKeyringFile } from '../../src/crypto/keyring.ts';
import { createEngine, type ProtectionEngine } from '../../src/engine/engine.ts';
import { DpgError } from '../../src/core/errors.ts';
import type { DataSetType, JobSpec, JobType } from '../../src/core/types.ts';

const MANIFESTS = fileURLToPath(new URL('../../config/manifests', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'dpg-workers-'));
const keyring = loadKeyringFile(ensureDevKeyring(dir));
const engines: ProtectionEngine[] = [];
after(async () => {
  await Promise.all(engines.map((e) => e.close()));
  rmSync(dir, { recursive: true, force: true });
});

function engine(workers: { max: number; inlineBytes: number; timeoutMs?: number; idleMs?: number }): ProtectionEngine {
  const e = createEngine({ manifestsDir: MANIFESTS, keyring, limits: { workers: { timeoutMs: 60_000, idleMs: 60_000, ...workers } } });
  engines.push(e);
  return e;
}

const job = (jobType: JobType, dataSetType: DataSetType): JobSpec => ({ manifestName: 'customer', jobType, dataSetType, context: { requestId: 'r-1' } });

const DOCS: Record<DataSetType, string> = {
  JSON: JSON.stringify({ customers: Array.from({ length: 40 }, (_, i) => ({ name: `Jane Doe${i}`, email: `jane${i}@example.com`, cardNumber: '4111 1111 1111 1111', note: `call +1 415-555-01${i % 10}0` })) }),
  XML: `<customers>${Array.from({ length: 40 }, (_, i) => `<customer><name>Jane Doe${i}</name><email>jane${i}@example.com</email><phone>+1 415-555-0100</phone></customer>`).join('')}</customers>`,
  SQL: Array.from({ length: 40 }, (_, i) => `INSERT INTO customers (name, email, cardNumber) VALUES ('Jane Doe${i}', 'jane${i}@example.com', '4111 1111 1111 1111');`).join('\n'),
  LIST: ['email', ...Array.from({ length: 40 }, (_, i) => `jane${i}@example.com`)].join('\n'),
};

describe('protection workers', () => {
  it('give the very bytes inline protection gives, for every data type and job type', async () => {
    const offloaded = engine({ max: 2, inlineBytes: 0 });
    const inline = engine({ max: 0, inlineBytes: 0 });
    let compared = 0;
    for (const jobType of ['Mask', 'Anonymise', 'Pseudonymise', 'Encrypt'] as const) {
      for (const type of ['JSON', 'XML', 'SQL'] as const) {
        const a = inline.protectDocument(job(jobType, type), DOCS[type]);
        const b = await offloaded.protectDocumentAsync(job(jobType, type), DOCS[type]);
        if (jobType === 'Encrypt') {
          // Encrypt is randomised: the worker's output must decrypt to the same as the inline one's.
          const back = (r: typeof a) => inline.protectDocument(job('Decrypt', type), r.dataSet).dataSet;
          assert.equal(back(b), back(a), `${jobType} ${type}`);
          assert.deepEqual(b.summary, a.summary);
        } else assert.deepEqual(b, a, `${jobType} ${type}`);
        compared++;
      }
    }
    assert.equal(compared, 12);
    assert.ok(offloaded.workerStats().started >= 1);
    assert.equal(inline.workerStats().started, 0, 'workers.max 0 starts none');
  });

  it('protect a LIST and a gRPC table in a worker, byte for byte', async () => {
    const offloaded = engine({ max: 1, inlineBytes: 0 });
    const inline = engine({ max: 0, inlineBytes: 0 });
    const listJob: JobSpec = { ...job('Pseudonymise', 'LIST'), manifestName: 'customer' };
    assert.deepEqual(await offloaded.protectDocumentAsync(listJob, DOCS.LIST), inline.protectDocument(listJob, DOCS.LIST));
    const labels = ['name', 'email', 'profile'];
    const files = Array.from({ length: 30 }, (_, i) => [`Jane Doe${i}`, `jane${i}@example.com`, '4111 1111 1111 1111']);
    const jsons = files.map((row) => row.map((cell) => JSON.stringify({ name: cell, cardNumber: '4111 1111 1111 1111' })));
    for (const [cellType, rows] of [['FILE', files], ['JSON', jsons]] as const) {
      const j = job('Pseudonymise', 'JSON');
      assert.deepEqual(await offloaded.protectRowsAsync(j, labels, rows, cellType), inline.protectRows(j, labels, rows, cellType), cellType);
    }
    assert.equal(offloaded.workerStats().started, 1, 'one worker served every task in turn');
  });

  it('start no worker for light documents, and pass the catalogue errors of heavy ones through', async () => {
    const e = engine({ max: 1, inlineBytes: 64 * 1024 });
    for (let i = 0; i < 20; i++) await e.protectDocumentAsync(job('Mask', 'JSON'), DOCS.JSON);
    assert.deepEqual(e.workerStats(), { alive: 0, started: 0 });
    const heavy = engine({ max: 1, inlineBytes: 0 });
    await assert.rejects(heavy.protectDocumentAsync({ ...job('Mask', 'JSON'), manifestName: 'nope' }, DOCS.JSON), (err: unknown) => err instanceof DpgError && err.code === 'MANIFEST_NOT_FOUND');
    await assert.rejects(heavy.protectDocumentAsync(job('Mask', 'XML'), '<a><b>'), (err: unknown) => err instanceof DpgError && err.code === 'MALFORMED_DATA_SET');
    // A job the manifest has no rules for, and failed values with their locations, come back whole.
    const failed = await heavy.protectDocumentAsync({ ...job('Pseudonymise', 'JSON'), context: { requestId: 'r', preserveStringLength: true } }, '{"cardNumber":"12"}').catch((e: unknown) => e);
    assert.ok(failed instanceof DpgError && failed.code === 'VALUE_NOT_PROTECTABLE', String(failed));
    assert.deepEqual(failed.errors?.map((f) => f.location), ['$.cardNumber']);
  });

  it('reap idle workers after idleMs, and start a fresh one for the next heavy document', async () => {
    const e = engine({ max: 2, inlineBytes: 0, idleMs: 50 });
    await Promise.all([e.protectDocumentAsync(job('Mask', 'SQL'), DOCS.SQL), e.protectDocumentAsync(job('Mask', 'XML'), DOCS.XML)]);
    assert.ok(e.workerStats().alive >= 1);
    for (let i = 0; i < 100 && e.workerStats().alive > 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(e.workerStats().alive, 0, 'no worker left at idle');
    const before = e.workerStats().started;
    await e.protectDocumentAsync(job('Mask', 'SQL'), DOCS.SQL);
    assert.equal(e.workerStats().started, before + 1);
  });

  it('keep at most `max` workers however many heavy documents wait', async () => {
    const e = engine({ max: 2, inlineBytes: 0 });
    const results = await Promise.all(Array.from({ length: 7 }, () => e.protectDocumentAsync(job('Mask', 'SQL'), DOCS.SQL)));
    assert.equal(new Set(results.map((r) => r.dataSet)).size, 1);
    assert.ok(e.workerStats().started <= 2, `started ${e.workerStats().started}`);
  });

  it('fail a task whose worker overruns timeoutMs or crashes with WORKER_FAILED, and serve the next one', async () => {
    // The workers' test hook (src/engine/protect-worker.ts): markers in the data hang or crash them.
    process.env.NODE_ENV = 'test';
    process.env.DPG_TEST_WORKER_FAULT = '1';
    const e = engine({ max: 1, inlineBytes: 0, timeoutMs: 1500 });
    const hang = await e.protectDocumentAsync(job('Mask', 'JSON'), '{"name":"Jane Doe","x":"dpg-test-worker-hang"}').catch((x: unknown) => x);
    assert.ok(hang instanceof DpgError && hang.code === 'WORKER_FAILED' && hang.status === 503 && hang.grpcStatus === 14, String(hang));
    assert.match(hang.message, /time budget of 1500 ms/);
    assert.equal(e.workerStats().alive, 0, 'the overrunning worker is gone');
    const crash = await e.protectDocumentAsync(job('Mask', 'JSON'), '{"name":"Jane Doe","x":"dpg-test-worker-crash"}').catch((x: unknown) => x);
    assert.ok(crash instanceof DpgError && crash.code === 'WORKER_FAILED', String(crash));
    assert.match(crash.message, /stopped \(exit code 70\)/);
    for (const err of [hang, crash]) assert.ok(!(err as Error).message.includes('Jane'), 'no payload in the error');
    const ok = await e.protectDocumentAsync(job('Mask', 'SQL'), DOCS.SQL);
    assert.equal(ok.summary.failed, 0);
    assert.equal(e.workerStats().started, 3, 'each failed worker was replaced');
  });
});
