// Collects a stream into memory under a hard byte limit checked while reading, before any parsing:
// the HTTP API's request bodies and the proxy's routed bodies both come through here. A body bound
// for a protection worker is kept as the chunks it arrived in (readChunks): each owns its memory,
// so the worker can be handed all of them, moved rather than copied, and joins them itself. Joining
// 10 MB on the event loop (a fresh allocation, its page faults and the copy) was the loop's largest
// single piece of work per heavy body (docs/performance.md, "Head of line").

import type { Readable } from 'node:stream';

export interface ReadLimitedErrors {
  /** The error for a body over the limit; the stream is paused (not destroyed) so a reply can still go out. */
  readonly tooLarge: () => Error;
  /** The error for a stream that failed or closed before its end. */
  readonly aborted: (cause?: Error) => Error;
}

/** A body as it arrived: its chunks in order, and their total length. */
export interface BodyChunks {
  readonly chunks: readonly Buffer[];
  readonly size: number;
}

export function readLimited(stream: Readable, limit: number, errors: ReadLimitedErrors): Promise<Buffer> {
  return readChunks(stream, limit, errors).then(joinChunks);
}

/** The chunks as one buffer (the only chunk itself, when there is one). */
export function joinChunks(body: BodyChunks): Buffer {
  return body.chunks.length === 1 ? body.chunks[0]! : Buffer.concat(body.chunks as Buffer[], body.size);
}

export function readChunks(stream: Readable, limit: number, errors: ReadLimitedErrors): Promise<BodyChunks> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (err?: Error): void => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      if (err) reject(err);
      else resolve({ chunks, size });
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        stream.pause();
        settle(errors.tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => settle();
    const onError = (err: Error): void => settle(errors.aborted(err));
    // 'close' before 'end' means the peer went away mid-body.
    const onClose = (): void => settle(errors.aborted());
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.on('close', onClose);
  });
}
