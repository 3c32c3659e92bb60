// LIST protection throughput and memory: our protect stream (3 of 10 columns masked by a cheap
// fake action) against a do-nothing pass-through and csv-parse → csv-stringify on the same bytes,
// plus peak RSS of a child process streaming a generated file from disk.
// Run: node --import ./scripts/ts-loader.mjs bench/list.bench.ts   (BENCH_BIG=1 for the 1 GB file; BENCH_MB=N sets the in-memory size)

import { spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable, Writable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse';
import { stringify } from 'csv-stringify';
import { createListProtectStream, type ListOptions } from '../src/formats/list/codec.ts';
import type { FieldAction, FieldResolver } from '../src/formats/codec.ts';
import type { Scalar } from '../src/core/types.ts';

/** Children load TypeScript the same way `npm run bench` does. */
const TS_LOADER = new URL('../scripts/ts-loader.mjs', import.meta.url).href;

const CHUNK = 64 * 1024;
const HEADER = 'id,name,email,phone,city,country,amount,date,status,note\n';

function row(i: number): string {
  return `${i},Person ${i % 997},user${i}@example.org,+44 20 7946 ${String(i % 10000).padStart(4, '0')},"London, UK",GB,${(i * 37) % 100000}.${i % 100},2024-0${(i % 9) + 1}-1${i % 10},active,"said ""hello"" once"\n`;
}

function generate(bytes: number): Buffer {
  const parts = [HEADER];
  let size = HEADER.length;
  for (let i = 0; size < bytes; i++) {
    const r = row(i);
    parts.push(r);
    size += r.length;
  }
  return Buffer.from(parts.join(''), 'utf8');
}

const maskValue = (v: Scalar): Scalar => {
  const s = String(v);
  return s.length <= 4 ? s : '*'.repeat(s.length - 4) + s.slice(-4);
};
const maskAction: FieldAction = {
  removes: () => false,
  apply: (v) => maskValue(v),
  applyBatch: (values) => values.map(maskValue),
};
const MASKED = new Set(['name', 'email', 'phone']);
const resolver: FieldResolver = { usesPaths: false, resolve: (name) => (MASKED.has(name) ? maskAction : undefined) };

function chunksOf(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; i += CHUNK) out.push(data.subarray(i, i + CHUNK));
  return out;
}

function sink(): Writable {
  return new Writable({
    write(_chunk, _enc, cb) {
      cb();
    },
  });
}

async function measure(label: string, data: Buffer, make: () => Transform[]): Promise<number> {
  const chunks = chunksOf(data);
  let best = Infinity;
  for (let run = 0; run < 3; run++) {
    const start = process.hrtime.bigint();
    await pipeline([Readable.from(chunks, { objectMode: false }), ...make(), sink()]);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
  }
  const mbs = data.length / 1024 / 1024 / best;
  console.log(`${label.padEnd(48)} ${mbs.toFixed(1).padStart(8)} MB/s`);
  return mbs;
}

async function throughput(): Promise<void> {
  const mb = Number(process.env.BENCH_MB ?? 16);
  const data = generate(mb * 1024 * 1024);
  console.log(`LIST throughput, ${mb} MiB in ${CHUNK / 1024} KiB chunks, 10 columns, 3 masked (best of 3)`);
  const limit = await measure('baseline: do-nothing PassThrough', data, () => [new PassThrough()]);
  const peer = await measure('baseline: csv-parse -> csv-stringify', data, () => [parse(), stringify()]);
  const ours = await measure('dpg createListProtectStream (batch 256)', data, () => [createListProtectStream(resolver)]);
  const options: ListOptions = { batchRows: 1 };
  const single = await measure('dpg createListProtectStream (batch 1)', data, () => [createListProtectStream(resolver, options)]);
  const none = await measure('dpg createListProtectStream (no column matched)', data, () => [
    createListProtectStream({ usesPaths: false, resolve: () => undefined }),
  ]);
  console.log(`ours / csv-parse+stringify = ${(ours / peer).toFixed(2)}x (goal >= 0.5x); ours / pass-through = ${(ours / limit).toFixed(3)}`);
  console.log(`batch 256 / batch 1 = ${(ours / single).toFixed(2)}x; no-match / 3-masked = ${(none / ours).toFixed(2)}x`);
}

/** Child process: protect a file from disk to nowhere, print peak RSS. */
async function rssChild(file: string): Promise<void> {
  const start = process.hrtime.bigint();
  await pipeline(createReadStream(file, { highWaterMark: CHUNK }), createListProtectStream(resolver), sink());
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(JSON.stringify({ maxRssMiB: process.resourceUsage().maxRSS / 1024, seconds }));
}

/** Same child without protection: the do-nothing RSS of a Node process streaming the file. */
async function rssBaselineChild(file: string): Promise<void> {
  await pipeline(createReadStream(file, { highWaterMark: CHUNK }), new PassThrough(), sink());
  console.log(JSON.stringify({ maxRssMiB: process.resourceUsage().maxRSS / 1024, seconds: 0 }));
}

async function peakRss(): Promise<void> {
  const big = process.env.BENCH_BIG === '1';
  const bytes = big ? 1024 * 1024 * 1024 : 128 * 1024 * 1024;
  const file = join(tmpdir(), `dpg-list-bench-${process.pid}.csv`);
  try {
    const out = createWriteStream(file);
    out.write(HEADER);
    let size = HEADER.length;
    for (let i = 0; size < bytes; ) {
      let block = '';
      for (let k = 0; k < 2000; k++, i++) block += row(i);
      size += block.length;
      if (!out.write(block)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    const self = fileURLToPath(import.meta.url);
    const run = (mode: string) => {
      const child = spawnSync(process.execPath, ['--import', TS_LOADER, self, mode, file], { encoding: 'utf8' });
      if (child.status !== 0) throw new Error(`child failed: ${child.stderr}`);
      return JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as { maxRssMiB: number; seconds: number };
    };
    const base = run('--rss-baseline-child');
    const ours = run('--rss-child');
    const mib = size / 1024 / 1024;
    console.log(`\nPeak RSS streaming a ${mib.toFixed(0)} MiB file from disk (child process)${big ? '' : '; BENCH_BIG=1 for 1 GiB'}`);
    console.log(`baseline: PassThrough                             ${base.maxRssMiB.toFixed(0).padStart(6)} MiB`);
    console.log(`dpg createListProtectStream                       ${ours.maxRssMiB.toFixed(0).padStart(6)} MiB  (goal <= 200 MiB; ${(mib / ours.seconds).toFixed(1)} MB/s)`);
  } finally {
    rmSync(file, { force: true });
  }
}

const [mode, file] = process.argv.slice(2);
if (mode === '--rss-child') await rssChild(file);
else if (mode === '--rss-baseline-child') await rssBaselineChild(file);
else {
  await throughput();
  await peakRss();
}
