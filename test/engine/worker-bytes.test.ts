// Issue 18 item 1: heavy bodies go to a protection worker as raw bytes (moved, not copied) and come
// back as the answer's bytes. Routed proxy bodies and /api/protect bodies give the very bytes the
// inline path gives; the caller's body is moved only when it says so; refused input keeps its class
// (the exchange never passes it through); /file/protect's XML and SQL CSV comes out the same from a
// worker; the event loop's answer to the worker's question (may this
// client run the job?) stops the task when it throws, with that very error.

import { after, describe, it } from 'node:test';
import { Readable } from 'node:stream';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDevKeyring, loadKeyringFile } from '../../src/crypto/keyring.ts';
import { createEngine, type ProtectionEngine } from '../../src/engine/engine.ts';
import { DpgError } from '../../src/core/errors.ts';
import type { JobSpec } from '../../src/core/types.ts';
import { transferOfAll, type BytesResult } from '../../src/engine/worker-tasks.ts';
import { compilePhase } from '../../src/proxy/exchange/phase.ts';
import { RefusedInputError } from '../../src/proxy/reading/body-kind.ts';
import { openEnvelope, type EnvelopeHeaders } from '../../src/transport/http/protect-envelope.ts';

const MANIFESTS = fileURLToPath(new URL('../../config/manifests', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'dpg-worker-bytes-'));
const keyring = loadKeyringFile(ensureDevKeyring(dir));
const offloaded: ProtectionEngine = createEngine({ manifestsDir: MANIFESTS, keyring, limits: { workers: { max: 1, inlineBytes: 0, timeoutMs: 60_000, idleMs: 60_000 } } });
const inline: ProtectionEngine = createEngine({ manifestsDir: MANIFESTS, keyring, limits: { workers: { max: 0, inlineBytes: 0, timeoutMs: 60_000, idleMs: 60_000 } } });
after(async () => {
  await offloaded.close();
  rmSync(dir, { recursive: true, force: true });
});

const CARD = '4111 1111 1111 1111';
const BODIES: readonly [string, string][] = [
  ['application/json', JSON.stringify({ customers: Array.from({ length: 30 }, (_, i) => ({ name: `Jane Doe${i}`, email: `jane${i}@example.com`, cardNumber: CARD, big: 12345678901234567890 })) }, null, 1)],
  ['application/xml; charset=utf-8', `<?xml version="1.0" encoding="UTF-8"?><customers>${Array.from({ length: 30 }, (_, i) => `<customer><name>Jane Doe${i}</name><email>jane${i}@example.com</email></customer>`).join('')}</customers>`],
  ['application/sql', Array.from({ length: 30 }, (_, i) => `INSERT INTO customers (name, email, cardNumber) VALUES ('Jane Doe${i}', 'jane${i}@example.com', '${CARD}');`).join('\n')],
  ['text/csv', ['name,email', ...Array.from({ length: 30 }, (_, i) => `Jane Doe${i},jane${i}@example.com`)].join('\r\n')],
];

/** A Buffer owning its whole ArrayBuffer (as a body read in chunks is), so it can be moved. */
const owned = (text: string): Buffer => {
  const b = Buffer.alloc(Buffer.byteLength(text));
  b.write(text);
  return b;
};

describe('heavy bodies as raw bytes in a worker', () => {
  it('protect routed bodies of every kind to the very bytes inline gives, moving the body only when consumed', async () => {
    const phase = { manifest: 'customer', jobType: 'Pseudonymise' };
    const viaWorker = compilePhase(phase, offloaded);
    const viaLoop = compilePhase(phase, inline);
    for (const [contentType, text] of BODIES) {
      const a = viaLoop.protectBody(Buffer.from(text), contentType, 'r-1');
      const kept = owned(text);
      const b = await viaWorker.protectBodyAsync(kept, contentType, 'r-1');
      assert.ok(b.body.equals(a.body), contentType);
      assert.deepEqual(b.outcome, a.outcome);
      assert.ok(a.outcome.valuesProtected >= 30 && !a.body.toString().includes('jane1@example.com'), contentType);
      assert.equal(kept.length, Buffer.byteLength(text), 'not consumed: the caller keeps its body');
      const moved = owned(text);
      const c = await viaWorker.protectBodyAsync(moved, contentType, 'r-1', undefined, { consume: true });
      assert.ok(c.body.equals(a.body), contentType);
      assert.equal(moved.length, 0, 'consumed: the body was moved to the worker, not copied');
    }
    // A body whose charset and bytes disagree is refused in the worker, and still as refused input.
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"name":"Jane Doe"}', 'utf16le')]);
    const refused = await viaWorker.protectBodyAsync(utf16, 'application/json; charset=utf-8', 'r-1').catch((e: unknown) => e);
    assert.ok(refused instanceof RefusedInputError && refused.code === 'UNSUPPORTED_DATA_SET_TYPE', String(refused));
    assert.equal(offloaded.workerStats().started, 1);
  });

  it('answer /api/protect bodies with the very bytes inline gives, after the event loop allowed the job', async () => {
    const headers = (dataSetType: EnvelopeHeaders['dataSetType']): EnvelopeHeaders => ({
      dataSetType,
      encoding: 'utf-8',
      sqlDialect: undefined,
      requestId: undefined,
      fallbackRequestId: 'fallback-1',
      maxDepth: 256,
    });
    const cases: [EnvelopeHeaders['dataSetType'], string][] = [
      ['JSON', `{"manifestName":"customer","jobType":"Mask","dataSet": ${BODIES[0]![1]} , "requestId":"q-1"}`],
      ['JSON', JSON.stringify({ manifestName: 'customer', jobType: 'Pseudonymise', dataSet: BODIES[0]![1] })],
      ['XML', JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: BODIES[1]![1] })],
      ['SQL', JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: BODIES[2]![1] })],
    ];
    for (const [type, body] of cases) {
      const envelope = openEnvelope(Buffer.from(body), headers(type));
      const a = envelope.protect(inline);
      const asked: JobSpec[] = [];
      const bytes = owned(body);
      const b = (await offloaded.offload(1, { kind: 'envelope', bytes, headers: headers(type) }, { transfer: [bytes.buffer as ArrayBuffer], onAsk: (job) => asked.push(job as JobSpec) })) as BytesResult;
      assert.ok(Buffer.from(b.bytes).equals(a.payload), type);
      assert.deepEqual(b.summary, a.summary);
      assert.deepEqual(asked, [envelope.job], 'the worker asked once, with the job it read');
    }
    // The event loop refuses the job: the task fails with that very error, and nothing is protected.
    const denied = new DpgError('FORBIDDEN', 'This client may not run Mask on customer');
    const body = JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: BODIES[2]![1] });
    const err = await offloaded
      .offload(1, { kind: 'envelope', bytes: Buffer.from(body), headers: headers('SQL') }, {
        onAsk: () => {
          throw denied;
        },
      })!
      .catch((e: unknown) => e);
    assert.equal(err, denied);
    // A malformed body fails in the worker before any question, with the inline path's error.
    const bad = await offloaded.offload(1, { kind: 'envelope', bytes: Buffer.from('{"dataSet": [1,'), headers: headers('JSON') }, { onAsk: () => assert.fail('asked') })!.catch((e: unknown) => e);
    assert.ok(bad instanceof DpgError && bad.code === 'INVALID_REQUEST' && bad.message === 'The request body is not valid JSON', String(bad));
    assert.equal(offloaded.workerStats().started, 1, 'the worker outlived the refused task');
  });

  it('take an /api/protect body as the chunks it arrived in: each moved to the worker, joined there, the same answer', async () => {
    const headers: EnvelopeHeaders = { dataSetType: 'XML', encoding: 'utf-8', sqlDialect: undefined, requestId: 'q-2', fallbackRequestId: 'f', maxDepth: 256 };
    const body = JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: BODIES[1]![1] });
    const expected = openEnvelope(Buffer.from(body), headers).protect(inline).payload;
    // Chunks as node:http hands them over: each owns its memory.
    const cut = [0, 7, 100, 101, 900, body.length];
    const chunks = cut.slice(1).map((end, i) => owned(body.slice(cut[i], end)));
    const transfer = transferOfAll(chunks);
    assert.equal(transfer.length, chunks.length, 'one ArrayBuffer per chunk');
    const moved = (await offloaded.offload(1, { kind: 'envelope', bytes: chunks, headers }, { transfer, onAsk: () => true })) as BytesResult;
    assert.ok(Buffer.from(moved.bytes).equals(expected));
    assert.deepEqual(chunks.map((c) => c.byteLength), [0, 0, 0, 0, 0], 'every chunk was moved, none copied');
    // Chunks that share one ArrayBuffer cannot be moved without their neighbours: copied, left intact.
    const whole = owned(body);
    const slices = [whole.subarray(0, 500), whole.subarray(500)];
    assert.deepEqual(transferOfAll(slices), []);
    const copied = (await offloaded.offload(1, { kind: 'envelope', bytes: slices, headers }, { transfer: transferOfAll(slices), onAsk: () => true })) as BytesResult;
    assert.ok(Buffer.from(copied.bytes).equals(expected));
    assert.equal(slices[0]!.length + slices[1]!.length, Buffer.byteLength(body), 'the caller still holds its chunks');
  });

  it('flatten heavy XML and SQL files for /file/protect in a worker into the very CSV bytes inline gives', async () => {
    const collect = async (e: ProtectionEngine, type: 'XML' | 'SQL', text: string) => {
      const job: JobSpec = { manifestName: 'customer', jobType: 'Pseudonymise', dataSetType: type, context: { requestId: 'r-1' } };
      const { output, summary } = e.protectToCsv(job, Readable.from([Buffer.from(text)]));
      const chunks: Buffer[] = [];
      for await (const c of output) chunks.push(Buffer.from(c as Buffer));
      return { csv: Buffer.concat(chunks), summary: await summary };
    };
    let csvTasks = 0;
    const offload = offloaded.offload.bind(offloaded);
    offloaded.offload = (cost, task, options) => {
      if (task.kind === 'csv') csvTasks++;
      return offload(cost, task, options);
    };
    for (const [type, text] of [['XML', BODIES[1]![1]], ['SQL', BODIES[2]![1]]] as const) {
      const a = await collect(inline, type, text);
      const b = await collect(offloaded, type, text);
      assert.ok(b.csv.equals(a.csv), type);
      assert.deepEqual(b.summary, a.summary);
      assert.ok(a.summary.protected >= 30 && !a.csv.toString().includes('jane1@example.com'), type);
    }
    assert.equal(csvTasks, 2, 'both went to the worker');
    assert.equal(inline.workerStats().started, 0);
  });
});
