// Collects a stream into memory under a hard byte limit checked while reading, before any parsing:
// the HTTP API's request bodies and the proxy's routed bodies both come through here.

import type { Readable } from 'node:stream';

export interface ReadLimitedErrors {
  /** The error for a body over the limit; the stream is paused (not destroyed) so a reply can still go out. */
  readonly tooLarge: () => Error;
  /** The error for a stream that failed or closed before its end. */
  readonly aborted: (cause?: Error) => Error;
}

export function readLimited(stream: Readable, limit: number, errors: ReadLimitedErrors): Promise<Buffer> {
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
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
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
