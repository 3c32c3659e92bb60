// The gateway's per-request objects die young: V8 is told not to move them to old space ahead of
// time, and to give them room. Allocation-site pretenuring makes V8 allocate straight into old space the
// objects of any allocation site whose objects survived a scavenge in high proportion. In a proxy that happens to
// node:http's and undici's per-request objects (a few requests in flight at a scavenge, or a burst,
// is enough), after which 3–6 KB of every request's garbage lands in old space: more full GCs,
// longer pauses, and the forward proxy's p99 (docs/performance.md, forward proxy CPU). What truly
// lives long here (compiled manifests, routes, pools) is built once at start and costs nothing to
// copy twice.
//
// The room: V8 shrinks the young generation to its minimum (1 MB a semi-space) after a full GC that
// finds little allocation (an idle spell), and grows it back only by doubling, each time as many
// bytes have survived scavenges as it holds. A proxy's requests leave few survivors, so after an idle
// spell a routed Mask request (~80 KB of garbage) ran at ~50 scavenges per 1,000 requests for
// thousands of requests, each scavenge a pause some request waits behind (docs/performance.md,
// "Forward proxy"). Growing sixteenfold instead reaches the default maximum (16 MB) at the first growth.

import { setFlagsFromString } from 'node:v8';

/**
 * V8 flags `dpg serve` sets for itself, in this order; bin/dpg.js sets the same before it compiles
 * dist/serve.cjs, as V8's flags are part of its code cache's check. Both read at run time.
 */
export const YOUNG_GARBAGE_FLAGS = ['--no-allocation-site-pretenuring', '--semi-space-growth-factor=16'] as const;

/**
 * Turns allocation-site pretenuring off and lets the young generation grow back in one step, for
 * this process (`dpg serve`), unless node was started with `--allocation-site-pretenuring` or its
 * own `--semi-space-growth-factor` (an operator's choice wins). Returns the flags it set.
 */
export function keepRequestGarbageYoung(execArgv: readonly string[] = process.execArgv): string[] {
  const set: string[] = [];
  for (const flag of YOUNG_GARBAGE_FLAGS) {
    const name = flag.replace(/^--no-/, '--').replace(/=.*$/, '');
    if (execArgv.some((a) => a === name || a.startsWith(`${name}=`))) continue;
    // Read by the GC at each collection (and each growth), so setting it after start takes effect at once.
    setFlagsFromString(flag);
    set.push(flag);
  }
  return set;
}
