// The gateway's per-request objects die young: V8 is told not to move them to old space ahead of
// time, and to give them room again quickly. Allocation-site pretenuring makes V8 allocate straight
// into old space the objects of any allocation site whose objects survived a scavenge in high
// proportion. In a proxy that happens to node:http's and undici's per-request objects (a few
// requests in flight at a scavenge, or a burst, is enough), after which 3–6 KB of every request's
// garbage lands in old space: more full GCs, longer pauses, and the forward proxy's p99
// (docs/performance.md, forward proxy CPU). What truly lives long here (compiled manifests, routes,
// pools) is built once at start and costs nothing to copy twice.
//
// The room: V8 shrinks the young generation to its minimum (1 MB a semi-space) after a full GC that
// finds little allocation (an idle spell), and grows it back only by doubling, each time as many
// bytes have survived scavenges as it holds. A proxy's requests leave few survivors, so after an
// idle spell routed Mask requests (~80 KB of garbage each) ran at ~55 scavenges per 1,000 requests
// for thousands of requests, each scavenge a pause some request waits behind (docs/performance.md,
// "Forward proxy"). Growing sixteenfold reaches the default maximum (16 MB) at the first growth.

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

/**
 * Lets the young generation grow back to its maximum in one step (`--semi-space-growth-factor=16`),
 * unless node was started with a growth factor of its own. Called once the gateway is ready: during
 * the start V8 grows it as usual, so an idle sidecar holds no more than before (a start with the
 * factor set held ~5 MB more after 15 s idle). Read by V8 at each growth; being set after the start
 * also keeps it out of the flags the code cache (bin/dpg.js) is checked against. Returns whether it did.
 */
export function growYoungGenerationInOneStep(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((a) => a.startsWith('--semi-space-growth-factor'))) return false;
  setFlagsFromString('--semi-space-growth-factor=16');
  return true;
}
