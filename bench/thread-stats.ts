// Per-thread CPU and scheduling figures of a process, from /proc/<pid>/task/<tid>/{stat,schedstat}:
// what can be counted on a busy machine where wall-clock latency means little. The event loop is the
// thread whose TID is the PID; with limits.workers.nice above 0 the protection workers' threads are
// the threads at a nice value above 0 ("lowered"); V8's helper threads and libuv's pool keep nice 0
// and count as "others" (so do the workers with nice 0).

import { readdirSync, readFileSync } from 'node:fs';

export interface ThreadSample {
  readonly tid: number;
  readonly nice: number;
  /** user + system CPU, seconds. */
  readonly cpu: number;
  /** Time on a CPU and time runnable but waiting for one (schedstat), seconds. */
  readonly run: number;
  readonly wait: number;
}

export function sampleThreads(pid: number): ThreadSample[] {
  const out: ThreadSample[] = [];
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const sched = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(' ');
      // stat fields 14, 15 (utime, stime; clock ticks) and 19 (nice), counted from 1 with pid first.
      out.push({ tid: Number(tid), nice: Number(f[16]), cpu: (Number(f[11]) + Number(f[12])) / 100, run: Number(sched[0]) / 1e9, wait: Number(sched[1]) / 1e9 });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

export interface ThreadGroup {
  cpu: number;
  run: number;
  wait: number;
  threads: number;
}

export type ThreadSplit = Record<'loop' | 'lowered' | 'others', ThreadGroup>;

/** CPU and run-queue wait between two samples: the event loop, the lowered threads (nice > 0), the rest. */
export function threadSplit(pid: number, before: readonly ThreadSample[], after: readonly ThreadSample[]): ThreadSplit {
  const groups = { loop: empty(), lowered: empty(), others: empty() };
  const earlier = new Map(before.map((t) => [t.tid, t]));
  for (const t of after) {
    const b = earlier.get(t.tid);
    const g = t.tid === pid ? groups.loop : t.nice > 0 ? groups.lowered : groups.others;
    g.cpu += t.cpu - (b?.cpu ?? 0);
    g.run += t.run - (b?.run ?? 0);
    g.wait += t.wait - (b?.wait ?? 0);
    g.threads++;
  }
  return groups;
}

function empty(): ThreadGroup {
  return { cpu: 0, run: 0, wait: 0, threads: 0 };
}

/**
 * One part per group: CPU seconds, run-queue wait (runnable but without a core), and that wait per
 * second on a CPU — the event loop's figure is what the light requests pay for a contended core.
 */
export function formatSplit(split: ThreadSplit): string {
  return (Object.entries(split) as [string, ThreadGroup][])
    .map(([name, g]) => `${name} (${g.threads}) ${g.cpu.toFixed(2)} s CPU, waited ${(g.wait * 1000).toFixed(0)} ms for a core (${g.run > 0 ? ((g.wait / g.run) * 1000).toFixed(0) : '–'} ms per CPU-s)`)
    .join('; ');
}
