// Reads a request body into memory with a hard limit checked while reading, before any parsing.

import type { IncomingMessage } from 'node:http';
import { DpgError } from '../../core/errors.ts';
import { readChunks, readLimited, type BodyChunks, type ReadLimitedErrors } from '../../core/read-limited.ts';

export function tooLarge(limit: number): DpgError {
  return new DpgError('PAYLOAD_TOO_LARGE', `The request body exceeds the limit of ${limit} bytes`);
}

/** Rejects at once when Content-Length already says the body is over the limit. */
export function checkDeclaredLength(req: IncomingMessage, limit: number): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
}

const errorsFor = (limit: number): ReadLimitedErrors => ({
  tooLarge: () => tooLarge(limit),
  aborted: (cause) => new DpgError('INVALID_REQUEST', cause ? 'The request body could not be read' : 'The request was aborted by the client'),
});

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  checkDeclaredLength(req, limit);
  return readLimited(req, limit, errorsFor(limit));
}

/** The body as the chunks it arrived in (for a body that may go to a protection worker unjoined). */
export function readBodyChunks(req: IncomingMessage, limit: number): Promise<BodyChunks> {
  checkDeclaredLength(req, limit);
  return readChunks(req, limit, errorsFor(limit));
}
