// The base64 decoding of the HTTP doors: linear time on hostile chunks (no backtracking regex over
// request data), strictness, and byte-exact results however the input is split into chunks.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { DpgError } from '../../src/core/errors.ts';
import { Base64DecodeStream, decodeBase64Strict } from '../../src/transport/http/base64-decoder.ts';
import { growthRatio } from '../helpers/growth.ts';

/** Pipes the chunks through a decoder; resolves to the bytes, or rejects with the decoder's error. */
async function decodeChunks(chunks: readonly Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  const decoder = Readable.from(chunks, { objectMode: false }).pipe(new Base64DecodeStream());
  for await (const part of decoder) out.push(part as Buffer);
  return Buffer.concat(out);
}

/** The decoder refuses the chunks with INVALID_REQUEST. */
async function refused(chunks: readonly Buffer[]): Promise<void> {
  await assert.rejects(decodeChunks(chunks), (err) => err instanceof DpgError && err.code === 'INVALID_REQUEST');
}

/**
 * Feeds the chunks to a decoder's transform step synchronously (as the stream does, minus the event
 * loop) and returns the error it reports; CPU time can then be measured around it.
 */
function transformError(chunks: readonly Buffer[]): Error | undefined {
  const decoder = new Base64DecodeStream();
  let failed: Error | undefined;
  for (const chunk of chunks) {
    decoder._transform(chunk, 'latin1', (err) => {
      failed ??= err ?? undefined;
    });
    if (failed) break;
  }
  return failed;
}

const KIB64 = 64 * 1024;
/** One input of n costs about as much CPU as sixteen of n/16 when linear, sixteen times as much when quadratic. */
const MAX_RATIO = 4;

function linear(name: string, ratio: number): void {
  assert.ok(ratio < MAX_RATIO, `${name}: one input costs ${ratio.toFixed(1)}× sixteen inputs of a sixteenth — not linear`);
}

test('hostile chunks are rejected in linear time (64 KiB of = then A)', async () => {
  const hostile: ((n: number) => Buffer)[] = [
    (n) => Buffer.from('='.repeat(n) + 'A', 'latin1'),
    (n) => Buffer.from('A'.repeat(n) + '='.repeat(n) + 'A', 'latin1'),
    (n) => Buffer.from('= '.repeat(n) + 'A', 'latin1'),
    (n) => Buffer.from('A'.repeat(n) + '!', 'latin1'),
  ];
  for (const [i, make] of hostile.entries()) {
    // The stream refuses each one (the outcome), and its cost grows linearly (CPU time, not a clock).
    await refused([make(KIB64)]);
    linear(`hostile chunk ${i}`, growthRatio((n) => {
      const chunk = make(n);
      return () => assert.ok(transformError([chunk]) instanceof DpgError);
    }, KIB64));
  }
  // Several hostile chunks in a row, as a slow upload would deliver them.
  const several = (n: number) => [Buffer.from('QUJD'), ...Array.from({ length: 8 }, () => Buffer.from('='.repeat(n) + 'A', 'latin1'))];
  await refused(several(KIB64));
  linear('hostile chunks in a row', growthRatio((n) => {
    const chunks = several(n);
    return () => assert.ok(transformError(chunks) instanceof DpgError);
  }, KIB64));
  linear('decodeBase64Strict (= then A)', growthRatio((n) => {
    const text = '='.repeat(n) + 'A';
    return () => assert.throws(() => decodeBase64Strict(text), DpgError);
  }, KIB64));
  linear('decodeBase64Strict (A then =)', growthRatio((n) => {
    const text = 'A'.repeat(n) + '='.repeat(n);
    return () => assert.throws(() => decodeBase64Strict(text), DpgError);
  }, KIB64));
});

test('padding: at most two, only at the end, and may be split across chunks', async () => {
  assert.equal((await decodeChunks([Buffer.from('QUI='), Buffer.from('')])).toString(), 'AB');
  assert.equal((await decodeChunks([Buffer.from('QQ='), Buffer.from('=')])).toString(), 'A');
  assert.equal((await decodeChunks([Buffer.from('QQ'), Buffer.from('=\n=\n')])).toString(), 'A');
  await refused([Buffer.from('QQ=='), Buffer.from('=')]);
  await refused([Buffer.from('QQ=='), Buffer.from('QUJD')]);
  await refused([Buffer.from('QQ=A')]);
  await refused([Buffer.from('Q===')]);
  await refused([Buffer.from('Q')]);
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
