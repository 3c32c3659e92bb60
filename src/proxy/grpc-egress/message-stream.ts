// The gRPC message framing of one call direction (grpc.io PROTOCOL-HTTP2 "Length-Prefixed-Message"):
// a compressed flag byte, a 4-byte big-endian length, the message. Each whole message is handed to
// the protector (decompressed first when flagged) and framed again; a message is emitted only once
// it is protected whole, and the first one that cannot be ends the stream with a GrpcCallError.
// The protector may answer later (a heavy message protected in a worker): the stream then waits,
// taking no more input, so messages leave in the order they came.

import { Transform, type TransformCallback } from 'node:stream';
import { gunzipSync, gzipSync, inflateSync, deflateSync } from 'node:zlib';
import { GrpcCallError, type GrpcCall } from './contract.ts';

export const GRPC_STATUS = { INTERNAL: 13, FAILED_PRECONDITION: 9, UNIMPLEMENTED: 12, RESOURCE_EXHAUSTED: 8 } as const;

const PREFIX = 5;
/** Encodings read and written again (gRPC's `gzip` and `deflate`, the zlib format). */
const CODECS: Record<string, { decode: typeof gunzipSync; encode: typeof gzipSync }> = {
  gzip: { decode: gunzipSync, encode: gzipSync },
  deflate: { decode: inflateSync, encode: deflateSync },
};
const PLAIN_TOKEN = /^[a-z0-9][a-z0-9._-]{0,31}$/;

/** A message of the call cannot be protected: the call's status. `index` counts from 1. */
export type ErrorMapper = (err: unknown, index: number) => GrpcCallError;

export interface MessageProtector {
  /** The protected message (the same Buffer when nothing changed), now or once a worker answers. */
  protect(message: Buffer): Buffer | Promise<Buffer>;
  /** The stream is over (ended, failed or cancelled): the protector's counts are final. */
  settle(): void;
}

export class MessageStream extends Transform {
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  private count = 0;
  private readonly codec: (typeof CODECS)[string] | undefined;

  constructor(
    private readonly call: GrpcCall,
    private readonly protector: MessageProtector,
    private readonly maxMessageBytes: number,
    private readonly mapError: ErrorMapper,
  ) {
    super();
    const encoding = call.encoding?.trim().toLowerCase();
    this.codec = encoding === undefined || encoding === '' || encoding === 'identity' ? undefined : CODECS[encoding];
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    this.drain(done);
  }

  override _flush(done: TransformCallback): void {
    this.protector.settle();
    if (this.buffered > 0) {
      done(new GrpcCallError(GRPC_STATUS.INTERNAL, `message ${this.count + 1} is truncated: the stream ended inside it`));
      return;
    }
    done();
  }

  override _destroy(err: Error | null, done: (error: Error | null) => void): void {
    this.protector.settle();
    done(err);
  }

  /** Protects and pushes every whole message buffered, then calls `done` (with the first failure). */
  private drain(done: TransformCallback): void {
    try {
      for (;;) {
        const next = this.nextFrame();
        if (next === undefined) break;
        const out = this.protectFrame(next.frame, next.compressed);
        if (out instanceof Promise) {
          // Protected elsewhere: nothing more is read until it is back, so the order holds.
          out.then(
            (frame) => {
              if (this.destroyed) return;
              this.push(frame);
              this.drain(done);
            },
            (err: unknown) => this.fail(err, done),
          );
          return;
        }
        this.push(out);
      }
    } catch (err) {
      this.fail(err, done);
      return;
    }
    done();
  }

  private fail(err: unknown, done: TransformCallback): void {
    this.chunks.length = 0;
    this.buffered = 0;
    done(err instanceof GrpcCallError ? err : this.mapError(err, this.count));
  }

  /** The next whole message's frame, consumed; undefined while it is not all here. */
  private nextFrame(): { frame: Buffer; compressed: boolean } | undefined {
    if (this.buffered < PREFIX) return undefined;
    const head = this.peekBytes(PREFIX);
    const flag = head[0]!;
    const length = head.readUInt32BE(1);
    if (flag > 1) throw new GrpcCallError(GRPC_STATUS.INTERNAL, `message ${this.count + 1} has an invalid compressed flag`);
    if (length > this.maxMessageBytes) {
      throw new GrpcCallError(GRPC_STATUS.RESOURCE_EXHAUSTED, `message ${this.count + 1} is larger than the route's limit of ${this.maxMessageBytes} bytes`);
    }
    if (this.buffered < PREFIX + length) return undefined;
    const frame = this.consume(PREFIX + length);
    this.count++;
    return { frame, compressed: flag === 1 };
  }

  private protectFrame(frame: Buffer, compressed: boolean): Buffer | Promise<Buffer> {
    const body = frame.subarray(PREFIX);
    if (!compressed) {
      const out = this.protector.protect(body);
      if (out instanceof Promise) return out.then((b) => (b === body ? frame : framed(b, 0)));
      return out === body ? frame : framed(out, 0);
    }
    const codec = this.compressedCodec();
    let plain: Buffer;
    try {
      plain = codec.decode(body, { maxOutputLength: this.maxMessageBytes });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new GrpcCallError(GRPC_STATUS.RESOURCE_EXHAUSTED, `message ${this.count} is larger than the route's limit of ${this.maxMessageBytes} bytes once decompressed`);
      }
      throw new GrpcCallError(GRPC_STATUS.INTERNAL, `message ${this.count} could not be decompressed`);
    }
    const out = this.protector.protect(plain);
    // Unchanged: the client's compressed bytes go on as they were.
    if (out instanceof Promise) return out.then((b) => (b === plain ? frame : framed(codec.encode(b), 1)));
    return out === plain ? frame : framed(codec.encode(out), 1);
  }

  private compressedCodec(): (typeof CODECS)[string] {
    if (this.codec) return this.codec;
    const encoding = this.call.encoding?.trim().toLowerCase();
    if (encoding === undefined || encoding === '' || encoding === 'identity') {
      throw new GrpcCallError(GRPC_STATUS.INTERNAL, `message ${this.count} is flagged compressed but the call declares no grpc-encoding`);
    }
    const named = PLAIN_TOKEN.test(encoding) ? ` ${encoding}` : '';
    throw new GrpcCallError(GRPC_STATUS.UNIMPLEMENTED, `grpc-encoding${named} cannot be read on a protected route (gzip, deflate and identity can)`);
  }

  /** The first `n` buffered bytes, without consuming them. */
  private peekBytes(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.mergeChunks();
    return this.chunks[0]!.subarray(0, n);
  }

  /** Consumes the first `n` buffered bytes. */
  private consume(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.mergeChunks();
    const first = this.chunks[0]!;
    const out = first.subarray(0, n);
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.buffered -= n;
    return out;
  }

  private mergeChunks(): void {
    const all = Buffer.concat(this.chunks, this.buffered);
    this.chunks.length = 0;
    this.chunks.push(all);
  }
}

function framed(message: Buffer, flag: 0 | 1): Buffer {
  const out = Buffer.allocUnsafe(PREFIX + message.length);
  out[0] = flag;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, PREFIX);
  return out;
}
