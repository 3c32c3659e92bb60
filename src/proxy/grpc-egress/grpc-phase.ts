// A route phase's GrpcPhase (contract.ts): for each call, the method's message type in this
// direction (request or response), the phase's job, and a MessageStream protecting each message:
// on the event loop, or in a protection worker when the message is heavy (the engine's offload,
// above limits.workers.inlineBytes, as HTTP bodies). What was protected is added to the call's
// tally when a job's run is over (its summary is final only then).

import { Transform } from 'node:stream';
import { DpgError } from '../../core/errors.ts';
import type { JobSpec } from '../../core/types.ts';
import type { Engine, PreparedJob } from '../../engine/types.ts';
import type { ProtectSummary } from '../../core/types.ts';
import { GrpcCallError, type GrpcCall, type GrpcPhase } from './contract.ts';
import { FieldTypeError, protectMessage } from './message-protector.ts';
import { GRPC_STATUS, MessageStream, type MessageProtector } from './message-stream.ts';
import { messageOf, type GrpcMessageResult } from './worker-message.ts';
import type { GrpcMethodPlan } from './route-descriptors.ts';
import { WireError } from './wire.ts';

/** protobuf's own default recursion limit. */
export const MAX_MESSAGE_DEPTH = 100;
/**
 * A long stream binds its job afresh every so many messages: the engine's per-job caches (one
 * entry per map key seen, for one) stay bounded however long the call lasts.
 */
const MESSAGES_PER_JOB = 1024;

export interface GrpcPhaseOptions {
  readonly methods: ReadonlyMap<string, GrpcMethodPlan>;
  readonly direction: 'request' | 'response';
  /** The phase's job for a request id (compilePhase: manifest, job type, context). */
  readonly job: (requestId: string) => JobSpec;
  readonly engine: Engine;
  /** Per message, compressed and decompressed (the route's maxBodyBytes). */
  readonly maxMessageBytes: number;
}

export function grpcPhase(options: GrpcPhaseOptions): GrpcPhase {
  const { methods, direction, job, engine, maxMessageBytes } = options;
  return {
    messages(call: GrpcCall): Transform {
      const method = methods.get(call.path);
      if (method === undefined) {
        // The route matched the call, but its descriptors do not describe it: nothing can be read.
        const refusal = () => new GrpcCallError(GRPC_STATUS.UNIMPLEMENTED, "the route's descriptors define no method at this path");
        return new Transform({ transform: (_chunk, _enc, done) => done(refusal()), flush: (done) => done(refusal()) });
      }
      const plan = direction === 'request' ? method.request : method.response;
      const { tally } = call;
      const add = (summary: ProtectSummary): void => {
        tally.valuesProtected += summary.protected;
        tally.valuesFailed += summary.failed;
      };
      let prepared: PreparedJob | undefined;
      let used = 0;
      /** Ends the running job: its summary (and the metrics' counts) is final now. */
      const retire = (): void => {
        const done = prepared;
        prepared = undefined;
        try {
          if (done !== undefined) add(done.finish());
        } catch {
          // Values failed outside silent mode: the call has already ended on them (check() below).
        }
      };
      // The message is cloned to the worker with its backing buffer: a frame of the call's own chunks
      // (16 KiB DATA frames, merged for this message), so little more than the message itself.
      const offload = (message: Buffer): Promise<unknown> | undefined =>
        engine.offload(message.length, { kind: 'grpc-message', job: job(call.requestId), plan, bytes: message, maxDepth: MAX_MESSAGE_DEPTH });
      const protector: MessageProtector = {
        protect(message) {
          // A heavy message goes to a worker (the same function, the same bytes out); a light one stays here.
          const running = offload(message);
          if (running !== undefined) {
            return running.then((result) => {
              const out = messageOf(message, result as GrpcMessageResult);
              add(out.summary);
              return out.message;
            });
          }
          if (prepared === undefined || used >= MESSAGES_PER_JOB) {
            retire();
            prepared = engine.prepare(job(call.requestId));
            used = 0;
          }
          used++;
          const out = protectMessage(message, plan, prepared.resolver, MAX_MESSAGE_DEPTH);
          // Failed values (outside silent mode) stop the call before this message is emitted.
          prepared.check();
          return out;
        },
        settle: retire,
      };
      return new MessageStream(call, protector, maxMessageBytes, (err, index) => callErrorOf(err, index, plan.fullName));
    },
  };
}

/** The call's status for a message that could not be protected; the text holds no payload. */
function callErrorOf(err: unknown, index: number, typeName: string): GrpcCallError {
  if (err instanceof WireError) return new GrpcCallError(GRPC_STATUS.INTERNAL, `message ${index} is not a valid ${typeName}: ${err.message}`);
  if (err instanceof FieldTypeError) return new GrpcCallError(GRPC_STATUS.FAILED_PRECONDITION, `message ${index}: ${err.message}`);
  if (err instanceof DpgError) {
    const status = err.code === 'VALUE_NOT_PROTECTABLE' ? GRPC_STATUS.FAILED_PRECONDITION : GRPC_STATUS.INTERNAL;
    return new GrpcCallError(status, `message ${index}: ${err.message}`);
  }
  return new GrpcCallError(GRPC_STATUS.INTERNAL, `message ${index} could not be protected`);
}
