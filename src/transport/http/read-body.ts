// Reads a request body into memory with a hard limit checked while reading, before any parsing.

import type { IncomingMessage } from 'node:http';
import { DpgError } from '../../core/errors.ts';

export function tooLarge(limit: number): DpgError {
  return new DpgError('PAYLOAD_TOO_LARGE', `The request body exceeds the limit of ${limit} bytes`);
}

/** Rejects at once when Content-Length already says the body is over the limit. */
export function checkDeclaredLength(req: IncomingMessage, limit: number): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  checkDeclaredLength(req, limit);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (err: Error | undefined): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (err) reject(err);
      else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        finish(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => finish(undefined);
    const onError = (): void => finish(new DpgError('INVALID_REQUEST', 'The request body could not be read'));
    const onAborted = (): void => finish(new DpgError('INVALID_REQUEST', 'The request was aborted by the client'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}
