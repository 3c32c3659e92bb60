// Where a gRPC call's time goes inside the gateway, for the bench that looks for it
// (bench/grpc-trace.mjs, loaded into `dpg serve` with --import; npm run bench -- grpc-route with
// GRPC_BENCH_TRACE=1): each phase of a call is published on a diagnostics channel with the call's
// request id and a timestamp. While no one subscribes nothing is published and no listener is
// added — one boolean read per call. Only the id, the phase's name and the time are published:
// never a header value or a byte of a message.

import { channel } from 'node:diagnostics_channel';
import type { EventEmitter } from 'node:events';

export const GRPC_CALL_CHANNEL = 'dpg:proxy:grpc-call';
const calls = channel(GRPC_CALL_CHANNEL);

/** What a subscriber gets. `at`: epoch milliseconds (comparable between processes on one machine). */
export interface GrpcCallPhase {
  readonly requestId: string;
  readonly phase: string;
  readonly at: number;
}

/** Records one phase of the call it was made for. */
export type PhaseMark = (phase: string) => void;

/** The call's mark function while someone listens; undefined otherwise (then nothing is traced). */
export function traceCall(requestId: string): PhaseMark | undefined {
  if (!calls.hasSubscribers) return undefined;
  return (phase) => calls.publish({ requestId, phase, at: performance.timeOrigin + performance.now() } satisfies GrpcCallPhase);
}

/**
 * Marks `phase` when `emitter` first emits `event`. A 'data' listener is only ever added to a
 * stream already piped (flowing), so tracing never changes how a stream flows.
 */
export function markFirst(mark: PhaseMark | undefined, emitter: EventEmitter, event: string, phase: string): void {
  if (mark !== undefined) emitter.once(event, () => mark(phase));
}
