// Head of line (issue 18): a heavy /api/protect body is handled on the event loop only as the
// chunks the socket delivered. Through a real listener and a real client, probes on the main
// thread count every call that touches a whole heavy body — Buffer.concat (joining it),
// TextDecoder.decode and Buffer#toString (decoding it), JSON.parse (parsing it) — made from the
// gateway's own code (src/): none while a worker protects it, and the same probes do see those
// calls when workers are off (so a probe that saw nothing proves something). The answer is the
// very bytes the inline path gives.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { createEngine, type ProtectionEngine } from '../../../src/engine/engine.ts';
import { openEnvelope } from '../../../src/transport/http/protect-envelope.ts';
import { CLIENTS, startTestGateway, tokenFor, type TestGateway } from '../../e2e/http-helpers.ts';
import { DEFAULT_MANIFESTS, testKeyring } from '../../helpers/engine.ts';

/** What counts as the whole body: far above any chunk the socket delivers (64 KiB at most). */
const WHOLE = 128 * 1024;
const workers = { max: 1, inlineBytes: 4096, timeoutMs: 60_000, idleMs: 60_000 };
let offloaded: ProtectionEngine;
let inline: ProtectionEngine;
let viaWorker: TestGateway;
let viaLoop: TestGateway;

before(async () => {
  offloaded = createEngine({ manifestsDir: DEFAULT_MANIFESTS, keyring: testKeyring(), limits: { workers } });
  inline = createEngine({ manifestsDir: DEFAULT_MANIFESTS, keyring: testKeyring(), limits: { workers: { ...workers, max: 0 } } });
  viaWorker = await startTestGateway({ engine: offloaded, http: { maxBodyBytes: 8 * 1024 * 1024 } });
  viaLoop = await startTestGateway({ engine: inline, http: { maxBodyBytes: 8 * 1024 * 1024 } });
});
after(async () => {
  await viaWorker.close();
  await viaLoop.close();
  await offloaded.close();
});

/** Counts calls on whole-body-sized input made from the gateway's sources while `run` runs. */
async function probe<T>(run: () => Promise<T>): Promise<{ result: T; calls: Record<string, number> }> {
  const calls: Record<string, number> = { 'Buffer.concat': 0, 'TextDecoder.decode': 0, 'Buffer#toString': 0, 'JSON.parse': 0 };
  const fromGateway = (): boolean => /\/src\//.test(new Error().stack ?? '');
  const count = (name: string, size: number): void => {
    if (size >= WHOLE && fromGateway()) calls[name]!++;
  };
  const { concat } = Buffer;
  const { decode } = TextDecoder.prototype;
  const { toString } = Buffer.prototype;
  const { parse } = JSON;
  Buffer.concat = function (list: readonly Uint8Array[], total?: number) {
    count('Buffer.concat', total ?? list.reduce((n, b) => n + b.length, 0));
    return concat.call(Buffer, list, total);
  } as typeof Buffer.concat;
  TextDecoder.prototype.decode = function (this: unknown, ...args: unknown[]) {
    count('TextDecoder.decode', (args[0] as { byteLength?: number } | undefined)?.byteLength ?? 0);
    return (decode as (...a: unknown[]) => string).apply(this, args);
  } as typeof decode;
  Buffer.prototype.toString = function (this: Buffer, ...args: unknown[]) {
    count('Buffer#toString', this.length);
    return (toString as (...a: unknown[]) => string).apply(this, args);
  } as typeof Buffer.prototype.toString;
  JSON.parse = function (text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) {
    count('JSON.parse', typeof text === 'string' ? text.length : 0);
    return parse(text, reviver);
  };
  try {
    return { result: await run(), calls };
  } finally {
    Buffer.concat = concat;
    TextDecoder.prototype.decode = decode;
    Buffer.prototype.toString = toString;
    JSON.parse = parse;
  }
}

/** ~175 KB of customers as the envelope's dataSet: a string of JSON text, so the whole body is JSON.parsed. */
function heavyEnvelope(): string {
  const customers = Array.from({ length: 1500 }, (_, i) => ({ name: `Jane Doe${i}`, email: `jane${i}@example.com`, cardNumber: '4111 1111 1111 1111', city: 'Springfield' }));
  return JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: JSON.stringify({ customers }) });
}

/** POSTs `body` and keeps the answer as the chunks it came in (joined after the probe window). */
async function post(base: string, body: string, token: string): Promise<{ status: number; chunks: Buffer[] }> {
  const res = await request(`${base}/api/protect`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-resource-token': token, 'x-request-id': 'heavy-1' },
    body,
  });
  const chunks: Buffer[] = [];
  for await (const chunk of res.body) chunks.push(chunk as Buffer);
  return { status: res.statusCode, chunks };
}

describe('a heavy /api/protect body on the event loop', () => {
  it('is never joined, decoded or parsed there when a worker protects it; inline it is (the probes see it)', async () => {
    const body = heavyEnvelope();
    assert.ok(body.length > 160_000);
    const started = offloaded.workerStats().started;
    const worker = await probe(async () => post(viaWorker.base, body, await tokenFor(viaWorker.base, CLIENTS.full)));
    assert.equal(worker.result.status, 200);
    assert.equal(offloaded.workerStats().started, started + 1, 'the body went to a worker');
    assert.deepEqual(worker.calls, { 'Buffer.concat': 0, 'TextDecoder.decode': 0, 'Buffer#toString': 0, 'JSON.parse': 0 });

    const loop = await probe(async () => post(viaLoop.base, body, await tokenFor(viaLoop.base, CLIENTS.full)));
    assert.equal(loop.result.status, 200);
    assert.ok(loop.calls['Buffer.concat']! >= 1 && loop.calls['JSON.parse']! >= 1 && loop.calls['TextDecoder.decode']! >= 1, JSON.stringify(loop.calls));

    // The same bytes either way, and the bytes the envelope code gives for this body.
    const answer = Buffer.concat(worker.result.chunks);
    assert.ok(answer.equals(Buffer.concat(loop.result.chunks)));
    const expected = openEnvelope(Buffer.from(body), { dataSetType: 'JSON', encoding: 'utf-8', sqlDialect: undefined, requestId: 'heavy-1', fallbackRequestId: 'x', maxDepth: 256 }).protect(inline).payload;
    assert.ok(answer.equals(expected));
    assert.ok(!answer.includes('jane7@example.com') && answer.includes('Springfield'));
  });
});
