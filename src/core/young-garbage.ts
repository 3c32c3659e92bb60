// The gateway's per-request objects die young: V8 is told not to move them to old space ahead of
// time. Allocation-site pretenuring makes V8 allocate straight into old space the objects of any
// allocation site whose objects survived a scavenge in high proportion. In a proxy that happens to
// node:http's and undici's per-request objects (a few requests in flight at a scavenge, or a burst,
// is enough), after which 3–6 KB of every request's garbage lands in old space: more full GCs,
// longer pauses, and the forward proxy's p99 (docs/performance.md, forward proxy CPU). What truly
// lives long here (compiled manifests, routes, pools) is built once at start and costs nothing to
// copy twice.

import { setFlagsFromString } from 'node:v8';

/**
 * Turns allocation-site pretenuring off for this process (`dpg serve`), unless node was started
 * with `--allocation-site-pretenuring` explicitly (an operator's choice wins). Returns whether it did.
 */
export function keepRequestGarbageYoung(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.includes('--allocation-site-pretenuring')) return false;
  // Read by the GC at each collection, so setting it after start takes effect at once.
  setFlagsFromString('--no-allocation-site-pretenuring');
  return true;
}
