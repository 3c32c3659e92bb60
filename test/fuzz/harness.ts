// The fuzzing harness: a target is a generator of hostile inputs and a check that throws when an
// invariant breaks. runTarget drives one target for a number of inputs and reports what the long
// run publishes (docs/reliability.md): inputs, time, failures, the slowest input, peak RSS.
// Inputs that failed once are kept as fixtures (test/fuzz/fixtures/<target>.json) and replayed first.

import { readFileSync, existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import { DpgError } from '../../src/core/errors.ts';

export interface FuzzTarget<T = unknown> {
  readonly name: string;
  /** What it covers, one line (the runner prints it; docs/reliability.md lists it). */
  readonly covers: string;
  readonly arbitrary: fc.Arbitrary<T>;
  /** Throws (an assertion) when an invariant breaks; returns quietly on accepted and refused inputs. */
  check(input: T): void;
  /** Relative cost: the short run in `npm test` gives each target about `shortRuns / cost` inputs. */
  readonly cost?: number;
}

/**
 * Thrown by a check for a failure of a known, reported and not yet fixed class: counted by label
 * in the report (and listed in docs/reliability.md) instead of failing the run, so the run goes on
 * finding other classes. Its fixtures replay as `todo` in the short run.
 */
export class KnownIssue extends Error {
  constructor(readonly label: string) {
    super(label);
  }
}

/** Inputs slower than this fail the long run (the per-input bound of issue 19). */
export const MAX_INPUT_MS = 1000;

/**
 * Runs `attempt` and lets a refusal from the error catalogue through (a refused input is a correct
 * answer); anything else — a TypeError, a RangeError, a stack overflow — is a crash and fails.
 * Returns the result, or undefined when the input was refused.
 */
export function refusedOr<R>(attempt: () => R): R | undefined {
  try {
    return attempt();
  } catch (err) {
    if (err instanceof DpgError) return undefined;
    throw err;
  }
}

export interface RunOptions {
  readonly runs: number;
  readonly seed?: number;
  /** Measure each input's time and fail any using more than MAX_INPUT_MS of CPU (the long run only). */
  readonly timed?: boolean;
  /** Fails the run when RSS passes this many bytes (memory bounded). */
  readonly maxRssBytes?: number;
  /** Stops starting new batches after this long (a time-boxed long run; the report says how many ran). */
  readonly maxMs?: number;
  /** Inputs per batch (default 10,000). */
  readonly batch?: number;
  readonly onProgress?: (done: number) => void;
}

export interface RunReport {
  readonly target: string;
  readonly inputs: number;
  readonly fixtures: number;
  readonly ms: number;
  /** CPU time of the process over the generated inputs (fixtures excluded): the cost per input is cpuMs / inputs. */
  readonly cpuMs: number;
  /** Load average (1 min) when the target started and when it ended: the share of a core it got depends on it. */
  readonly load: readonly [number, number];
  /** The slowest input, wall clock and CPU (the 1 s bound applies to CPU time). */
  readonly maxInputMs: number;
  readonly maxInputCpuMs: number;
  readonly peakRssBytes: number;
  readonly seed: number;
  /** Inputs that hit a KnownIssue, by label. */
  readonly known: Readonly<Record<string, number>>;
  /** Batches (of `batch` inputs) that failed; each failing batch is shrunk to one input. */
  readonly failures: number;
  /** The first shrunk failing inputs (fixture JSON) and their errors. */
  readonly counterexamples?: readonly string[];
  readonly errors?: readonly string[];
}

/** Buffers survive the JSON of a fixture file as { "$base64": "..." }. */
export function toFixture(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_k, v) => (v && v.type === 'Buffer' && Array.isArray(v.data) ? { $base64: Buffer.from(v.data).toString('base64') } : v)));
}

export function fromFixture(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (_k, v) => (v && typeof v === 'object' && typeof v.$base64 === 'string' ? Buffer.from(v.$base64, 'base64') : v));
}

export function fixturesOf(name: string): unknown[] {
  const file = new URL(`./fixtures/${name}.json`, import.meta.url);
  if (!existsSync(file)) return [];
  return (JSON.parse(readFileSync(file, 'utf8')) as unknown[]).map(fromFixture);
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

export function runTarget<T>(target: FuzzTarget<T>, options: RunOptions): RunReport {
  const seed = options.seed ?? Date.now() % 2 ** 31;
  const maxRss = options.maxRssBytes ?? 1024 * 1024 * 1024;
  const deadline = options.maxMs === undefined ? Infinity : performance.now() + options.maxMs;
  let peakRss = process.memoryUsage.rss();
  let maxInputMs = 0;
  let maxInputCpuMs = 0;
  let done = 0;
  const started = performance.now();

  const fixtures = fixturesOf(target.name) as T[];
  for (const input of fixtures) target.check(input);

  const known: Record<string, number> = {};
  const load0 = loadavg()[0]!;
  const cpuStart = process.cpuUsage();
  const property = fc.property(target.arbitrary, (input) => {
    const t0 = options.timed ? performance.now() : 0;
    const cpu0 = options.timed ? process.cpuUsage() : undefined;
    try {
      target.check(input);
    } catch (err) {
      if (!(err instanceof KnownIssue)) throw err;
      known[err.label] = (known[err.label] ?? 0) + 1;
    }
    if (cpu0 !== undefined) {
      const ms = performance.now() - t0;
      const cpuMs = cpuMsSince(cpu0);
      if (ms > maxInputMs) maxInputMs = ms;
      if (cpuMs > maxInputCpuMs) maxInputCpuMs = cpuMs;
      // The bound is on CPU time: on a shared machine wall time also counts the waits for a core.
      if (cpuMs > MAX_INPUT_MS) throw new Error(`one input took ${cpuMs.toFixed(0)} ms of CPU (bound ${MAX_INPUT_MS} ms)`);
    }
  });
  // Batches with their own seeds: a failure is recorded (shrunk) and the run goes on, so one bug
  // does not hide the others; RSS is sampled between batches.
  const batch = Math.min(options.runs, options.batch ?? 10_000);
  let inputs = 0;
  let failures = 0;
  const counterexamples: string[] = [];
  const errors: string[] = [];
  for (let b = 0; inputs < options.runs && performance.now() < deadline; b++) {
    const numRuns = Math.min(batch, options.runs - inputs);
    const result = fc.check(property, { numRuns, seed: (seed + b) | 0, endOnFailure: false });
    inputs += result.numRuns;
    done = inputs;
    if (result.failed) {
      failures++;
      if (counterexamples.length < 5) {
        counterexamples.push(JSON.stringify(toFixture(result.counterexample?.[0])));
        const e = result.errorInstance;
        errors.push(e instanceof Error ? (e.stack ?? e.message) : String(e));
      }
    }
    const rss = process.memoryUsage.rss();
    if (rss > peakRss) peakRss = rss;
    if (rss > maxRss) {
      failures++;
      errors.push(`RSS ${(rss / 2 ** 20).toFixed(0)} MiB passed the bound of ${(maxRss / 2 ** 20).toFixed(0)} MiB`);
      break;
    }
    options.onProgress?.(done);
  }
  const report: RunReport = {
    target: target.name,
    inputs,
    fixtures: fixtures.length,
    ms: performance.now() - started,
    cpuMs: cpuMsSince(cpuStart),
    load: [load0, loadavg()[0]!],
    failures,
    maxInputMs,
    maxInputCpuMs,
    peakRssBytes: peakRss,
    seed,
    known,
  };
  return failures === 0 ? report : { ...report, counterexamples, errors };
}
