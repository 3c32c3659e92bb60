// Does the event loop's own garbage collection wait for helper threads while a protection worker is
// busy (issue 18, head of line)? A synchronous allocation loop on the main thread never sleeps by
// itself, so any of its time that is neither on a core nor runnable (schedstat) is spent inside a
// collection waiting for V8's helper threads to finish their share. Measured for 2 s while a worker
// protects a 10 MB JSON document, each policy in a fresh process, alternated 3 times:
//   worker  — this build: only the worker's thread lowered to limits.workers.nice (10)
//   all     — the policy before: every thread but the event loop lowered (V8's helpers, libuv's pool)
//   stgc    — this build under `node --single-threaded-gc` (no helpers in any collection)
// Counted (CPU and sleep time), so the split holds on a busy machine; print the load average with it.
//   npm run bench -- loop-gc-wait

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const NICE = 10;

interface Sample {
  readonly policy: string;
  readonly run: number;
  readonly wait: number;
  readonly asleep: number;
  readonly gcs: number;
  readonly gcMs: number;
  readonly longest: number;
}

async function measure(policy: string): Promise<void> {
  const { ensureDevKeyring, loadKeyringFile } = await import('../src/crypto/keyring.ts');
  const { createEngine } = await import('../src/engine/engine.ts');
  const sched = (): number[] => readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map((x) => Number(x) / 1e6);
  const keyring = loadKeyringFile(ensureDevKeyring(mkdtempSync(join(tmpdir(), 'dpg-gc-wait-'))));
  const engine = createEngine({ manifestsDir: join(ROOT, 'config/manifests'), keyring, limits: { workers: { max: 1, inlineBytes: 0, timeoutMs: 600_000, idleMs: 60_000, nice: NICE } } });
  const job = { manifestName: 'customer', jobType: 'Mask', dataSetType: 'JSON', context: { requestId: 'r-1' } } as const;
  const parts: string[] = [];
  for (let i = 0, n = 0; n < 10 * 1024 * 1024; i++) {
    const r = JSON.stringify({ id: i, name: `Customer ${i}`, email: `c${i}@example.com`, cardNumber: '4111 1111 1111 1111', city: 'Springfield' });
    parts.push(r);
    n += r.length + 1;
  }
  const heavy = engine.protectDocumentAsync(job as never, `{"customers":[${parts.join(',')}]}`);
  await new Promise((r) => setTimeout(r, 1500)); // the worker has started and is busy
  if (policy === 'all') for (const t of readdirSync('/proc/self/task')) if (Number(t) !== process.pid) setPriority(Number(t), NICE);
  const gcs: number[] = [];
  const observer = new PerformanceObserver((list) => gcs.push(...list.getEntries().map((e) => e.duration)));
  observer.observe({ entryTypes: ['gc'] });
  const [run0, wait0] = sched();
  const t0 = performance.now();
  let keep: object[] = [];
  while (performance.now() - t0 < 2000) {
    for (let i = 0; i < 1000; i++) keep.push({ i, s: `x${i}` });
    if (keep.length > 50_000) keep = [];
  }
  const [run1, wait1] = sched();
  const wall = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 10));
  observer.disconnect();
  const run = run1! - run0!;
  const wait = wait1! - wait0!;
  const sample: Sample = { policy, run, wait, asleep: wall - run - wait, gcs: gcs.length, gcMs: gcs.reduce((a, b) => a + b, 0), longest: Math.max(0, ...gcs) };
  process.stdout.write(JSON.stringify(sample) + '\n');
  await heavy;
  await engine.close();
}

function orchestrate(): void {
  if (process.platform !== 'linux') {
    console.log('loop-gc-wait bench skipped: per-thread schedstat and nice values are Linux only');
    return;
  }
  const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const before = load();
  const samples: Sample[] = [];
  for (let round = 0; round < 3; round++) {
    for (const policy of ['all', 'worker', 'stgc']) {
      const flags = policy === 'stgc' ? ['--single-threaded-gc'] : [];
      const r = spawnSync(process.execPath, [...flags, '--import', join(ROOT, 'scripts/ts-loader.mjs'), SELF, 'measure', policy], { cwd: ROOT, encoding: 'utf8' });
      const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
      if (!line) throw new Error(`the ${policy} run failed: ${r.stderr.slice(-500)}`);
      samples.push(JSON.parse(line) as Sample);
    }
  }
  console.log(`the event loop allocating for 2 s while a worker protects 10 MB of JSON (3 runs each, load average before ${before}, after ${load()}):`);
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const rows: Record<string, number> = {};
  for (const policy of ['all', 'worker', 'stgc']) {
    const s = samples.filter((x) => x.policy === policy);
    rows[policy] = median(s.map((x) => x.asleep));
    const label = { all: 'every other thread lowered (before)', worker: "only the worker's thread lowered (this build)", stgc: 'this build, node --single-threaded-gc' }[policy];
    console.log(
      `  ${label!.padEnd(46)} asleep in GC ${s.map((x) => x.asleep.toFixed(0)).join(' / ')} ms (median ${rows[policy]!.toFixed(0)}); on a core ${median(s.map((x) => x.run)).toFixed(0)} ms, ` +
        `waiting for one ${median(s.map((x) => x.wait)).toFixed(0)} ms; GC pauses ${median(s.map((x) => x.gcs))}, ${median(s.map((x) => x.gcMs)).toFixed(0)} ms, longest ${median(s.map((x) => x.longest)).toFixed(0)} ms`,
    );
  }
  const met = rows.worker! < rows.all!;
  console.log(`goal: the event loop waits less inside its own GC than under the policy before (median asleep ${rows.worker!.toFixed(0)} vs ${rows.all!.toFixed(0)} ms): ${met ? 'MET' : 'NOT MET'}`);
}

if (process.argv[2] === 'measure') await measure(process.argv[3]!);
else orchestrate();
