// A heavy gRPC message protected in a protection worker, as a heavy HTTP body is (the engine's
// offload, docs/operations.md#workers): the event loop frames and forwards, the worker reads,
// protects and writes the message. The worker gets the message's plan (plain objects and Maps,
// which cross by structured clone, cycles included) and the phase's job, binds the job afresh,
// and answers with the bytes and the summary — or with the failure, by its kind, so that the call's
// status and message (no payload) are the same as on the event loop.

import { DpgError, isDpgError, type ErrorCode } from '../../core/errors.ts';
import type { JobSpec, ProtectSummary } from '../../core/types.ts';
import type { PreparedJob } from '../../engine/types.ts';
import { FieldTypeError, protectMessage } from './message-protector.ts';
import type { MessagePlan } from './message-plan.ts';
import { WireError } from './wire.ts';

export interface GrpcMessageTask {
  readonly kind: 'grpc-message';
  readonly job: JobSpec;
  readonly plan: MessagePlan;
  readonly bytes: Uint8Array;
  readonly maxDepth: number;
}

/** What the worker answers. `bytes` undefined: the message is unchanged (the caller keeps its own). */
export type GrpcMessageResult =
  | { readonly bytes: Uint8Array | undefined; readonly summary: ProtectSummary }
  | { readonly failure: { readonly name: 'WireError' | 'FieldTypeError' | 'DpgError'; readonly message: string; readonly code?: ErrorCode } };

/** Runs in the worker. Messages of our own error classes hold no payload; anything else is not passed on. */
export function runGrpcMessageTask(prepare: (job: JobSpec) => PreparedJob, task: GrpcMessageTask): GrpcMessageResult {
  const message = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
  try {
    const prepared = prepare(task.job);
    const out = protectMessage(message, task.plan, prepared.resolver, task.maxDepth);
    const summary = prepared.finish();
    return { bytes: out === message ? undefined : out, summary };
  } catch (err) {
    if (err instanceof WireError) return { failure: { name: 'WireError', message: err.message } };
    if (err instanceof FieldTypeError) return { failure: { name: 'FieldTypeError', message: err.message } };
    if (isDpgError(err)) return { failure: { name: 'DpgError', message: err.message, code: err.code } };
    throw err;
  }
}

/** On the event loop: the worker's answer as protectMessage's (the Buffer, or the same error class thrown). */
export function messageOf(original: Buffer, result: GrpcMessageResult): { message: Buffer; summary: ProtectSummary } {
  if ('failure' in result) {
    const f = result.failure;
    if (f.name === 'WireError') throw new WireError(f.message);
    if (f.name === 'FieldTypeError') throw new FieldTypeError(f.message);
    throw new DpgError(f.code ?? 'INTERNAL', f.message);
  }
  const bytes = result.bytes;
  return { message: bytes === undefined ? original : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), summary: result.summary };
}
