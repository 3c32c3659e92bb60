// The base64 decoding of the HTTP doors: linear time on hostile chunks (no backtracking regex over
// request data), strictness, and byte-exact results however the input is split into chunks.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import { DpgError } from '../../src/core/errors.ts';
import { Base64DecodeStream, decodeBase64Strict } from '../../src/transport/http/base64-decoder.ts';

/** Pipes the chunks through a decoder; resolves to the bytes, or rejects with the decoder's error. */
async function decodeChunks(chunks: readonly Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  const decoder = Readable.from(chunks, { objectMode: false }).pipe(new Base64DecodeStream());
  for await (const part of decoder) out.push(part as Buffer);
  return Buffer.concat(out);
}

async function timeToFail(chunks: readonly Buffer[]): Promise<number> {
  const started = performance.now();
  await assert.rejects(decodeChunks(chunks), (err) => err instanceof DpgError && err.code === 'INVALID_REQUEST');
  return performance.now() - started;
}

const KIB64 = 64 * 1024;

test('hostile chunks are rejected in linear time (64 KiB of = then A)', async () => {
  const hostile = [
    Buffer.from('='.repeat(KIB64) + 'A', 'latin1'),
    Buffer.from('A'.repeat(KIB64) + '='.repeat(KIB64) + 'A', 'latin1'),
    Buffer.from('= '.repeat(KIB64) + 'A', 'latin1'),
    Buffer.from('A'.repeat(KIB64) + '!', 'latin1'),
  ];
  for (const chunk of hostile) {
    const ms = await timeToFail([chunk]);
    assert.ok(ms < 100, `a hostile chunk took ${ms.toFixed(1)} ms`);
  }
  // Several hostile chunks in a row, as a slow upload would deliver them.
  const ms = await timeToFail([Buffer.from('QUJD'), ...Array.from({ length: 8 }, () => Buffer.from('='.repeat(KIB64) + 'A', 'latin1'))]);
  assert.ok(ms < 100, `hostile chunks took ${ms.toFixed(1)} ms`);
  const started = performance.now();
  assert.throws(() => decodeBase64Strict('='.repeat(KIB64) + 'A'), DpgError);
  assert.throws(() => decodeBase64Strict('A'.repeat(KIB64) + '='.repeat(KIB64)), DpgError);
  assert.ok(performance.now() - started < 100);
});

test('padding: at most two, only at the end, and may be split across chunks', async () => {
  assert.equal((await decodeChunks([Buffer.from('QUI='), Buffer.from('')])).toString(), 'AB');
  assert.equal((await decodeChunks([Buffer.from('QQ='), Buffer.from('=')])).toString(), 'A');
  assert.equal((await decodeChunks([Buffer.from('QQ'), Buffer.from('=\n=\n')])).toString(), 'A');
  await timeToFail([Buffer.from('QQ=='), Buffer.from('=')]);
  await timeToFail([Buffer.from('QQ=='), Buffer.from('QUJD')]);
  await timeToFail([Buffer.from('QQ=A')]);
  await timeToFail([Buffer.from('Q===')]);
  await timeToFail([Buffer.from('Q')]);
  assert.equal(decodeBase64Strict('QUI=').toString(), 'AB');
  assert.equal(decodeBase64Strict(' QQ\r\n== ').toString(), 'A');
  assert.throws(() => decodeBase64Strict('QQ=A'), DpgError);
  assert.throws(() => decodeBase64Strict('QQ==='), DpgError);
  assert.throws(() => decodeBase64Strict('QUJ*'), DpgError);
});

test('any bytes, any chunking, with or without line breaks: decoded exactly', async () => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(40), { maxLength: 12 }), fc.boolean(), async (bytes, cuts, wrap) => {
      let text = Buffer.from(bytes).toString('base64');
      if (wrap) text = text.replace(/.{1,76}/g, '$&\r\n');
      const chunks: Buffer[] = [];
      let at = 0;
      for (const cut of cuts) {
        chunks.push(Buffer.from(text.slice(at, at + cut), 'latin1'));
        at += cut;
      }
      chunks.push(Buffer.from(text.slice(at), 'latin1'));
      assert.deepEqual(await decodeChunks(chunks), Buffer.from(bytes));
      assert.deepEqual(decodeBase64Strict(text), Buffer.from(bytes));
    }),
    { numRuns: 300 },
  );
});
