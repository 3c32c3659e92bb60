// Who wins a contended core: the event loop. Every door and probe shares the one event-loop thread,
// while a heavy document can wait. So a protection worker's thread runs at a lower scheduling
// priority: the pool lowers it the moment it exists, and the worker lowers itself again as its code
// starts. Nothing else is lowered: V8's helper threads and libuv's pool serve the event loop too, and
// a lowered helper holding a share of the loop's own garbage collection makes the loop wait (measured:
// docs/performance.md, "Head of line: where a light request's time goes"). Priorities only matter
// when the gateway's threads want more cores than it has (docs/operations.md, Workers).
//
// Linux only: there each thread has its own nice value (setpriority with TID 0 is the calling thread,
// with another TID that thread). Elsewhere the call would lower the whole process, event loop
// included, so nothing is done. Raising a nice value back needs privilege: a lower setting given on
// reload applies to new workers only.

import { readdirSync, readFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { isMainThread } from 'node:worker_threads';

/** In a protection worker: its thread takes `nice` (0-19). Whether it did. */
export function lowerWorkerThread(nice: number | undefined, platform: NodeJS.Platform = process.platform): boolean {
  if (isMainThread || platform !== 'linux' || nice === undefined || nice <= 0) return false;
  try {
    if (getPriority(0) < nice) setPriority(0, Math.min(19, nice));
    return true;
  } catch {
    // A sandbox that forbids setpriority: the worker still runs, at the event loop's priority.
    return false;
  }
}

/** The IDs of this process's threads now (Linux; empty elsewhere or when /proc is not readable). */
export function threadIds(platform: NodeJS.Platform = process.platform): Set<number> {
  if (platform !== 'linux') return new Set();
  try {
    return new Set(readdirSync('/proc/self/task').map(Number));
  } catch {
    return new Set();
  }
}

/**
 * On the event loop, right after `new Worker()` (which creates the worker's OS thread before it
 * returns): the threads that did not exist in `before` — the new worker's — take `nice`. Only
 * those: V8's platform threads and libuv's pool also do the event loop's own work (its parallel
 * scavenges wait for the helpers that took a share; its file reads and DNS lookups run in the
 * pool), so lowering them makes the event loop wait behind the very worker it should win against
 * (docs/performance.md, "Head of line: where a light request's time goes"). Returns how many
 * threads were lowered.
 */
export function lowerNewThreads(before: ReadonlySet<number>, nice: number | undefined, platform: NodeJS.Platform = process.platform): number {
  if (!isMainThread || platform !== 'linux' || nice === undefined || nice <= 0) return 0;
  let lowered = 0;
  for (const id of threadIds(platform)) {
    if (before.has(id) || id === process.pid) continue; // the event loop's thread (its TID is the PID)
    try {
      if (threadNice(id) >= nice) continue;
      setPriority(id, Math.min(19, nice));
      lowered++;
    } catch {
      // The thread ended meanwhile, or the sandbox forbids it: it keeps its priority.
    }
  }
  return lowered;
}

/** A thread's nice value, field 19 of /proc/self/task/<tid>/stat. */
export function threadNice(tid: string | number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}
