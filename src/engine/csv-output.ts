// /file/protect output: the protected data as CSV. LIST streams row by row; a JSON array streams
// element by element (rows spooled until the header — the union of columns — is known); XML and SQL
// are read whole (bounded by the door's limit), protected, then flattened into one table.

import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DpgError } from '../core/errors.ts';
import type { JobSpec, ProtectSummary } from '../core/types.ts';
import type { Codecs } from '../formats/registry.ts';
import { createFlatTableCsvStream } from '../formats/list/csv-writer.ts';
import { createListProtectStream } from '../formats/list/codec.ts';
import { flattenJsonStream } from '../formats/json/flatten-stream.ts';
import { protectJsonText } from '../formats/json/protect-text.ts';
import type { Engine } from './types.ts';
import { bytesCost } from './offload-cost.ts';
import { asBuffer, transferOf, type BytesResult } from './worker-tasks.ts';

export interface CsvOutputLimits {
  readonly maxDepth: number;
  readonly maxDocumentBytes: number;
}

/** Reads a document that has to be held whole, refusing it as soon as it passes the limit. */
async function readAll(input: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > limit) {
      input.destroy();
      throw new DpgError('PAYLOAD_TOO_LARGE', `This data type is protected in memory: at most ${limit} bytes`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/**
 * A Readable that produces nothing until `start` resolves to the real output, then relays it with
 * backpressure; destroying it ends the generator, which destroys the real stream.
 */
function deferred(start: () => Promise<Readable>): Readable {
  return Readable.from(
    (async function* () {
      const real = await start();
      for await (const chunk of real) yield chunk as Buffer | string;
    })(),
    { objectMode: false },
  );
}

export function protectToCsv(
  engine: Engine,
  codecs: Codecs,
  limits: CsvOutputLimits,
  job: JobSpec,
  input: Readable,
): { output: Readable; summary: Promise<ProtectSummary> } {
  let settle!: { resolve: (s: ProtectSummary) => void; reject: (e: unknown) => void };
  const summary = new Promise<ProtectSummary>((resolve, reject) => (settle = { resolve, reject }));
  summary.catch(() => undefined); // callers that only stream still see the error on the output

  const type = job.dataSetType;
  // Manifest and job type are checked now, before a byte is read.
  const prepared = engine.prepare(job);

  if (type === 'LIST') {
    const protector = createListProtectStream(prepared.resolver, { beforeRelease: () => prepared.check() });
    const finisher = new Transform({
      transform(chunk, _enc, cb) {
        cb(null, chunk);
      },
      flush(cb) {
        try {
          settle.resolve(prepared.finish());
          cb();
        } catch (err) {
          cb(err as Error);
        }
      },
    });
    pipeline(input, protector, finisher).catch((err: unknown) => settle.reject(err));
    finisher.once('error', (err) => settle.reject(err));
    return { output: finisher, summary };
  }

  if (type === 'JSON') {
    const output = deferred(async () => {
      try {
        const csv = await flattenJsonStream(input, {
          maxDepth: limits.maxDepth,
          protectElement: (elementText, index) => protectJsonText(elementText, prepared.resolver, limits, undefined, `JSON array element ${index}`),
          beforeRelease: () => settle.resolve(prepared.finish()),
        });
        return csv;
      } catch (err) {
        settle.reject(err);
        throw err;
      }
    });
    return { output, summary };
  }

  const output = deferred(async () => {
    try {
      const bytes = await readAll(input, limits.maxDocumentBytes);
      // A heavy document is protected and flattened in a worker (docs/operations.md, Workers): the
      // same CSV bytes (ProtectionEngine.documentToCsv), and other requests go on meanwhile.
      const running = engine.offload(bytesCost(type, bytes.length), { kind: 'csv', job, bytes }, { transfer: transferOf(bytes) });
      if (running) {
        const result = (await running) as BytesResult;
        settle.resolve(result.summary);
        return Readable.from([asBuffer(result.bytes)]);
      }
      const text = bytes.toString('utf8');
      const options = { sqlDialect: job.context.sqlDialect };
      const protectedText = codecs.documents[type].protect(text, prepared.resolver, options);
      settle.resolve(prepared.finish());
      const table = codecs.flatteners[type](protectedText, options);
      return createFlatTableCsvStream(table);
    } catch (err) {
      settle.reject(err);
      throw err;
    }
  });
  return { output, summary };
}
