// Overload shedding (docs/operations.md#overload): each door admits new work only while its
// requests and request bytes in flight are under their bounds and the event loop keeps time. Work
// refused here has not started, so the client can retry it safely; queueing it instead would grow
// memory until the kernel kills the sidecar.

import type { OverloadConfig } from '../config/types.ts';
import { DpgError } from './errors.ts';

/** The doors that take new work (the admin listener and probes are never shed). */
export type OverloadDoor = 'proxy' | 'reverse' | 'transparent' | 'http' | 'grpc';
/** Why work is shed; the metrics give every door a series per reason. */
export const SHED_REASONS = ['requests', 'bytes', 'event-loop'] as const;
export type ShedReason = (typeof SHED_REASONS)[number];

export const DEFAULT_OVERLOAD: OverloadConfig = {
  maxRequestsInFlight: 256,
  maxBytesInFlight: 32 * 1024 * 1024,
  maxEventLoopDelayMs: 1000,
  maxEventLoopLagMs: 50,
  // Off: a loop busy all the time yet keeping up is no reason to refuse work (docs/operations.md#overload).
  maxEventLoopUtilization: 1,
  retryAfterSeconds: 1,
};

/** How often the event loop's lateness is sampled. */
const SAMPLE_MS = 100;
/**
 * Two late samples in a row shut the guard for this long: the backlog a stall leaves arrives right
 * after it. One late sample alone does not: a single stall is often the very request that caused it
 * (an interception certificate minted, one large body parsed), which must not be refused for it.
 */
const HOLD_MS = 1000;
/** Weight of the newest sample in the event-loop utilisation average (about one second at 100 ms samples). */
const UTILISATION_WEIGHT = 0.1;
/** The lag guard reads the median lateness of this many samples (one second). */
const LAG_WINDOW = 10;
/**
 * The lag guard sheds only while the loop is also busy at least this share of the time: a late
 * loop that is mostly idle is being kept off the CPU by other processes, not queueing requests, and
 * refusing work would not make it any faster.
 */
const LAG_BUSY_FLOOR = 0.8;

/** What the sampler saw in one interval: how late its timer fired, and the loop's busy share (0-1). */
export interface LoopSample {
  readonly lateMs: number;
  readonly utilisation: number;
}

/**
 * Three signs that the event loop cannot keep up, each a bound of its own.
 * - Stall (maxEventLoopDelayMs): a loop late by a second twice in a row already fails probes, and
 *   work accepted right after a stall only lengthens the queue; timers run before I/O callbacks in
 *   each loop turn, so the late sample is seen before the backlog is admitted.
 * - Queueing (maxEventLoopLagMs): the median lateness over the last second, while the loop is busy
 *   (LAG_BUSY_FLOOR). A timer due during a turn fires when the turn ends, so its lateness is a fair
 *   draw from how long turns take — and a turn is as long as the work that was waiting when it
 *   began. A loop that keeps up, however busy, runs short turns; one that falls behind finds more
 *   sockets ready each turn and its turns grow. The median ignores one long turn (a GC pause, one
 *   inline parse) that the stall guard judges.
 * - Utilisation (maxEventLoopUtilization, opt-in): a loop busy nearly all the time. Measured at
 *   half the capacity on 2 cores it tripped with latency fine, so it is off unless set.
 */
export class LoopGuard {
  private lateUntil = -Infinity;
  private lastLate = false;
  private readonly recent: number[] = [];
  /** The last sample's lateness in ms (for the gauge). */
  lastMs = 0;
  /** Median lateness of the last second's samples, in ms. */
  lagMs = 0;
  /** Average share of time the loop was busy (0-1), over about the last second. */
  utilisation = 0;

  constructor(
    private readonly config: Pick<OverloadConfig, 'maxEventLoopDelayMs' | 'maxEventLoopLagMs' | 'maxEventLoopUtilization'>,
    private readonly now: () => number,
  ) {}

  /** Whether any loop guard is on (else no sampler runs). */
  get enabled(): boolean {
    const c = this.config;
    return c.maxEventLoopDelayMs > 0 || (c.maxEventLoopLagMs ?? 0) > 0 || (c.maxEventLoopUtilization ?? 1) < 1;
  }

  record(sample: LoopSample): void {
    const { maxEventLoopDelayMs: maxMs } = this.config;
    this.lastMs = sample.lateMs;
    const late = maxMs > 0 && sample.lateMs > maxMs;
    if (late && this.lastLate) this.lateUntil = this.now() + HOLD_MS;
    this.lastLate = late;
    this.recent.push(sample.lateMs);
    if (this.recent.length > LAG_WINDOW) this.recent.shift();
    this.lagMs = median(this.recent);
    this.utilisation += UTILISATION_WEIGHT * (sample.utilisation - this.utilisation);
  }

  late(): boolean {
    const { maxEventLoopLagMs: maxLag = 0, maxEventLoopUtilization: maxUtilisation = 1 } = this.config;
    return (
      this.now() < this.lateUntil ||
      (maxLag > 0 && this.recent.length >= LAG_WINDOW && this.lagMs > maxLag && this.utilisation >= LAG_BUSY_FLOOR) ||
      (maxUtilisation < 1 && this.utilisation > maxUtilisation)
    );
  }
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length === 0 ? 0 : s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Samples the event loop every SAMPLE_MS into a LoopGuard (unref'd: it never keeps the process alive). */
class LoopSampler {
  private expected: number;
  private elu = performance.eventLoopUtilization();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly guard: LoopGuard,
    private readonly now: () => number,
  ) {
    this.expected = now() + SAMPLE_MS;
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
    this.timer.unref();
  }

  private sample(): void {
    const t = this.now();
    const lateMs = Math.max(0, t - this.expected);
    this.expected = t + SAMPLE_MS;
    const elu = performance.eventLoopUtilization();
    const window = performance.eventLoopUtilization(elu, this.elu);
    this.elu = elu;
    this.guard.record({ lateMs, utilisation: window.utilization });
  }

  close(): void {
    clearInterval(this.timer);
  }
}

/** One admitted request: release it exactly once when its exchange ends (idempotent). */
export interface Admission {
  /** Body bytes received so far beyond what was declared (chunked bodies count as they arrive). */
  received(bytes: number): void;
  release(): void;
}

/** The admission bounds of one door. */
export class DoorGate {
  requests = 0;
  bytes = 0;

  constructor(
    readonly door: OverloadDoor,
    private readonly overload: Overload,
  ) {}

  /**
   * Admits one request declaring `declaredBytes` (its Content-Length; 0 when unknown), or says why
   * not. A single request larger than the byte bound is still admitted when the door holds none
   * (its own size limit governs it), so the bound is never lower than the largest allowed body.
   */
  admit(declaredBytes: number): Admission | ShedReason {
    const { config } = this.overload;
    const reason = this.overload.loopLate()
      ? 'event-loop'
      : this.requests >= config.maxRequestsInFlight
        ? 'requests'
        : this.requests > 0 && this.bytes + declaredBytes > config.maxBytesInFlight
          ? 'bytes'
          : undefined;
    if (reason !== undefined) {
      this.overload.shed(this.door, reason);
      return reason;
    }
    this.requests++;
    this.bytes += declaredBytes;
    let held = declaredBytes;
    let seen = 0;
    let released = false;
    return {
      received: (n) => {
        if (released) return;
        seen += n;
        if (seen > held) {
          this.bytes += seen - held;
          held = seen;
        }
      },
      release: () => {
        if (released) return;
        released = true;
        this.requests--;
        this.bytes -= held;
      },
    };
  }

  /**
   * For work that is not a request (a CONNECT before its tunnel, a new transparent connection):
   * whether the door could take a request now; a refusal is counted as shed.
   */
  refuseNew(): ShedReason | undefined {
    const reason = this.saturation();
    if (reason !== undefined) this.overload.shed(this.door, reason);
    return reason;
  }

  /** Why the door would refuse a request now (readiness), without counting a shed. */
  saturation(): ShedReason | undefined {
    const { config } = this.overload;
    if (this.overload.loopLate()) return 'event-loop';
    if (this.requests >= config.maxRequestsInFlight) return 'requests';
    if (this.bytes >= config.maxBytesInFlight) return 'bytes';
    return undefined;
  }
}

export interface OverloadHooks {
  /** Called for every request or connection refused (metrics, a rate-limited log line). */
  readonly onShed?: (door: OverloadDoor, reason: ShedReason) => void;
  readonly now?: () => number;
  /** false: no sampling timer; the caller feeds Overload.loop.record() (tests, with a stubbed clock). */
  readonly sampler?: false;
}

/** The gates of every door and the event-loop guard they share. */
export class Overload {
  private readonly gates = new Map<OverloadDoor, DoorGate>();
  /** The event-loop guards' state (its record() is the sampler's input). */
  readonly loop: LoopGuard;
  private readonly sampler: LoopSampler | undefined;

  constructor(
    readonly config: OverloadConfig,
    private readonly hooks: OverloadHooks = {},
  ) {
    const now = hooks.now ?? (() => performance.now());
    this.loop = new LoopGuard(config, now);
    this.sampler = hooks.sampler !== false && this.loop.enabled ? new LoopSampler(this.loop, now) : undefined;
  }

  gate(door: OverloadDoor): DoorGate {
    let g = this.gates.get(door);
    if (g === undefined) {
      g = new DoorGate(door, this);
      this.gates.set(door, g);
    }
    return g;
  }

  loopLate(): boolean {
    return this.loop.late();
  }

  /** The event loop's lateness at the last sample, in ms. */
  loopDelayMs(): number {
    return this.loop.lastMs;
  }

  /** The event loop's busy share (0-1), averaged over about the last second. */
  loopUtilisation(): number {
    return this.loop.utilisation;
  }

  shed(door: OverloadDoor, reason: ShedReason): void {
    this.hooks.onShed?.(door, reason);
  }

  /** The first saturated door and why (readiness), or undefined. */
  saturated(): string | undefined {
    for (const g of this.gates.values()) {
      const reason = g.saturation();
      if (reason !== undefined) return `${g.door}: ${describe(reason)}`;
    }
    return undefined;
  }

  /** Requests and bytes in flight per door (gauges). */
  load(): { door: OverloadDoor; requests: number; bytes: number }[] {
    return [...this.gates.values()].map((g) => ({ door: g.door, requests: g.requests, bytes: g.bytes }));
  }

  close(): void {
    this.sampler?.close();
  }
}

function describe(reason: ShedReason): string {
  if (reason === 'requests') return 'requests in flight at limits.overload.maxRequestsInFlight';
  if (reason === 'bytes') return 'request bytes in flight at limits.overload.maxBytesInFlight';
  return 'event loop late (limits.overload.maxEventLoopDelayMs, maxEventLoopLagMs or maxEventLoopUtilization)';
}

/** The catalogue error a shed request is answered with (503 / UNAVAILABLE). Names the bound, never the request. */
export function overloadedError(door: OverloadDoor, reason: ShedReason): DpgError {
  return new DpgError('OVERLOADED', `The gateway is at capacity (${door}: ${describe(reason)}); retry after the Retry-After interval`);
}

/** Content-Length as a number of bytes; 0 when absent or unreadable (the parser refuses bad ones). */
export function declaredLength(header: string | undefined): number {
  if (header === undefined) return 0;
  const n = Number(header);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}
