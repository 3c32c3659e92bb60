// The long fuzz run: `npm run fuzz -- [--runs N] [--target NAME[,NAME]] [--minutes M] [--batch B] [--seed S] [--json FILE]`.
// `--minutes` stops a target after M minutes (whole batches of 10,000), reporting how many inputs ran.
// Each target gets N generated inputs (default 1,000,000), each input timed against the 1 s bound,
// RSS sampled every 1,000 inputs. Prints one line per target and a table at the end; exits 1 when
// any target failed, printing the shrunk input to add to test/fuzz/fixtures/<target>.json.

import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runTarget, type RunReport } from './harness.ts';
import { TARGETS } from './targets/index.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '1000000' },
    target: { type: 'string' },
    seed: { type: 'string' },
    json: { type: 'string' },
    minutes: { type: 'string' },
    batch: { type: 'string' },
    list: { type: 'boolean', default: false },
  },
});

if (values.list) {
  for (const t of TARGETS) console.log(`${t.name.padEnd(16)} ${t.covers}`);
  process.exit(0);
}
const runs = Number(values.runs);
const wanted = values.target?.split(',').map((s) => s.trim());
const unknown = wanted?.filter((w) => !TARGETS.some((t) => t.name === w)) ?? [];
if (!Number.isInteger(runs) || runs < 1 || unknown.length > 0) {
  console.error(unknown.length > 0 ? `unknown target(s): ${unknown.join(', ')} (see --list)` : '--runs must be a positive integer');
  process.exit(2);
}
const targets = TARGETS.filter((t) => wanted === undefined || wanted.includes(t.name));
const seed = values.seed === undefined ? undefined : Number(values.seed);

const reports: RunReport[] = [];
const mib = (b: number): string => (b / 2 ** 20).toFixed(0);
console.log(`fuzz: ${targets.length} target(s), ${runs.toLocaleString('en')} inputs each, node ${process.version}, load ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`);
for (const t of targets) {
  const started = Date.now();
  const report = runTarget(t, {
    runs,
    timed: true,
    ...(seed === undefined ? {} : { seed }),
    ...(values.minutes === undefined ? {} : { maxMs: Number(values.minutes) * 60_000 }),
    ...(values.batch === undefined ? {} : { batch: Number(values.batch) }),
    onProgress: (done) => process.stderr.write(`  ${t.name}: ${done.toLocaleString('en')} (${((Date.now() - started) / 1000).toFixed(0)} s)\n`),
  });
  reports.push(report);
  console.log(
    `${t.name.padEnd(16)} inputs ${report.inputs.toLocaleString('en').padStart(9)}  ${(report.ms / 1000).toFixed(1).padStart(7)} s  CPU ${(report.cpuMs / Math.max(1, report.inputs)).toFixed(3)} ms/input  load ${report.load.map((l) => l.toFixed(1)).join('→')}  failures ${report.failures}  max input ${report.maxInputMs.toFixed(1)} ms (CPU ${report.maxInputCpuMs.toFixed(1)} ms)  peak RSS ${mib(report.peakRssBytes)} MiB  seed ${report.seed}`,
  );
  for (const [label, n] of Object.entries(report.known)) console.log(`  known issue, ${n.toLocaleString('en')} input(s): ${label}`);
  for (const [i, c] of (report.counterexamples ?? []).entries()) console.log(`  FAILED on ${c}\n  ${report.errors?.[i]?.split('\n').slice(0, 8).join('\n  ')}`);
}
if (values.json) writeFileSync(values.json, JSON.stringify({ date: new Date().toISOString(), runs, reports }, null, 2) + '\n');
process.exit(reports.some((r) => r.failures > 0) ? 1 : 0);
