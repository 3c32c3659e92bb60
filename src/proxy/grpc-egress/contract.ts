// The seam between HTTP/2 interception (which reads a routed gRPC call off the wire) and gRPC
// message protection (which knows the route's .proto types and manifest). A routed call's DATA
// bytes go through the phase's `messages()` transform: length-prefixed messages in (the 5-byte gRPC
// prefix: compressed flag, big-endian length), the same framing out, each message protected. The
// interception side never decodes messages itself, and protection never sees HTTP/2 frames.

import type { Transform } from 'node:stream';

/** One gRPC call as the protection side needs to know it; holds no payload. */
export interface GrpcCall {
  /** `/package.Service/Method`, as sent in `:path`. */
  readonly path: string;
  /** The `grpc-encoding` header of this direction's messages (undefined: identity). */
  readonly encoding: string | undefined;
  readonly requestId: string;
  /** Where the transform adds what it protected, for the call's audit line and metrics (counts only). */
  readonly tally: GrpcTally;
}

/** Values protected (or restored) and values failed (silent mode) over a call, both directions. */
export interface GrpcTally {
  valuesProtected: number;
  valuesFailed: number;
}

/**
 * A call that cannot be protected ends with this gRPC status; nothing of the failing message is
 * sent on. `grpcMessage` never holds payload content.
 */
export class GrpcCallError extends Error {
  constructor(
    /** A gRPC status code: 13 INTERNAL, 9 FAILED_PRECONDITION, 12 UNIMPLEMENTED, 8 RESOURCE_EXHAUSTED. */
    readonly status: number,
    readonly grpcMessage: string,
  ) {
    super(grpcMessage);
    this.name = 'GrpcCallError';
  }
}

/** A route phase that can protect gRPC messages (set on CompiledPhase when the route has a grpc block). */
export interface GrpcPhase {
  /**
   * A fresh transform for one call in this phase's direction. It emits only whole, protected,
   * framed messages and fails (destroys itself with a GrpcCallError) on the first message it cannot
   * protect, on a truncated message at the end, or on a compressed message it cannot read.
   */
  messages(call: GrpcCall): Transform;
}
