// /file/protect output: the protected data as CSV. LIST streams row by row; JSON, XML and SQL are
// read whole (bounded by the door's limit), protected, then flattened into one table.

import { Readable } from 'node:stream';
import type { JobSpec, ProtectSummary } from '../core/types.ts';
import type { Codecs } from '../formats/registry.ts';
import { createFlatTableCsvStream } from '../formats/csv-writer.ts';
import type { Engine } from './types.ts';

async function readAll(input: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

export function protectToCsv(
  engine: Engine,
  codecs: Codecs,
  job: JobSpec,
  input: Readable,
): { output: Readable; summary: Promise<ProtectSummary> } {
  let resolveSummary!: (s: ProtectSummary) => void;
  let rejectSummary!: (e: unknown) => void;
  const summary = new Promise<ProtectSummary>((res, rej) => {
    resolveSummary = res;
    rejectSummary = rej;
  });
  summary.catch(() => undefined);
  const type = job.dataSetType;
  const output = Readable.from(
    (async function* () {
      try {
        const text = await readAll(input);
        const result = engine.protectDocument(job, text);
        if (type === 'LIST') {
          yield result.dataSet as string;
        } else {
          const table = codecs.flatteners[type](result.dataSet, { sqlDialect: job.context.sqlDialect });
          for await (const chunk of createFlatTableCsvStream(table)) yield chunk as string | Buffer;
        }
        resolveSummary(result.summary);
      } catch (err) {
        rejectSummary(err);
        throw err;
      }
    })(),
    { objectMode: false },
  );
  return { output, summary };
}
