// Types of bench/hol-trace.mjs (plain JS so a built gateway can load it with --import).
import type { Gc, Stall } from './hol-breakdown.ts';

export declare const epochNow: () => number;
export declare function traceLoop(options?: { tickMs?: number; minStallMs?: number }): { readonly stalls: Stall[]; readonly gcs: Gc[]; stop(): void };
