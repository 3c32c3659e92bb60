// Who wins a contended core: the event loop. Every door and probe shares the one event-loop thread,
// while a heavy document can wait. So a protection worker lowers its own thread's scheduling
// priority as it starts, and the pool lowers the process's other helper threads alike (V8's platform
// threads, which do most of a worker's garbage collection, and libuv's pool); only the event loop
// keeps its priority. Priorities only matter when the gateway's threads want more cores than it has
// (docs/operations.md, Workers).
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

/**
 * On the event loop: every other thread of the process below `nice` takes it (threads started
 * since the last call included). Returns how many threads were lowered.
 */
export function lowerHelperThreads(nice: number | undefined, platform: NodeJS.Platform = process.platform): number {
  if (!isMainThread || platform !== 'linux' || nice === undefined || nice <= 0) return 0;
  let lowered = 0;
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return 0;
  }
  for (const tid of tids) {
    const id = Number(tid);
    if (id === process.pid) continue; // the event loop's thread (its TID is the PID)
    try {
      if (threadNice(tid) >= nice) continue;
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
