// Bodies of routed requests and responses: read whole under a byte limit (nothing is forwarded
// before the last byte has arrived), and Content-Encoding undone before protection and redone after.

import type { Readable } from 'node:stream';
import {
  brotliCompressSync,
  brotliDecompressSync,
  deflateSync,
  gunzipSync,
  gzipSync,
  inflateRawSync,
  inflateSync,
  constants as zlib,
} from 'node:zlib';
import { DpgError } from '../../core/errors.ts';
import { readLimited } from '../../core/read-limited.ts';

/** The client (or upstream) went away before the body was complete. */
export class BodyAbortedError extends Error {
  constructor(cause?: unknown) {
    super('The body ended before it was complete', cause === undefined ? undefined : { cause });
    this.name = 'BodyAbortedError';
  }
}

function tooLarge(limit: number): DpgError {
  return new DpgError('PAYLOAD_TOO_LARGE', `The body is larger than the route's limit of ${limit} bytes`);
}

/**
 * Collects a body up to `limit` bytes. Over the limit it stops reading (the stream is paused, not
 * destroyed, so a 413 can still be written on the same connection) and rejects with PAYLOAD_TOO_LARGE.
 */
export function readBody(stream: Readable, limit: number): Promise<Buffer> {
  return readLimited(stream, limit, { tooLarge: () => tooLarge(limit), aborted: (cause) => new BodyAbortedError(cause) });
}

const KNOWN = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

/**
 * The codings of a Content-Encoding header in the order they were applied, `identity` dropped.
 * An unknown coding is refused (415): a body we cannot read is a body we cannot protect.
 */
export function parseContentEncoding(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const codings: string[] = [];
  for (const v of Array.isArray(header) ? header : [header]) {
    for (const raw of v.split(',')) {
      const c = raw.trim().toLowerCase();
      if (c === '' || c === 'identity') continue;
      if (!KNOWN.has(c)) {
        throw new DpgError('UNSUPPORTED_DATA_SET_TYPE', `Content-Encoding ${c.slice(0, 40)} is not supported (gzip, deflate, br)`);
      }
      codings.push(c);
    }
  }
  return codings;
}

/** Undoes the codings (last applied first). Output is capped at `limit` bytes: no decompression bombs. */
export function decodeContent(body: Buffer, codings: readonly string[], limit: number): Buffer {
  let out = body;
  for (let i = codings.length - 1; i >= 0; i--) {
    const coding = codings[i];
    try {
      if (coding === 'br') out = brotliDecompressSync(out, { maxOutputLength: limit });
      else if (coding === 'deflate') out = inflateLenient(out, limit);
      else out = gunzipSync(out, { maxOutputLength: limit });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(limit);
      throw new DpgError('MALFORMED_DATA_SET', `The body is not valid ${coding} data`, { cause: err });
    }
  }
  if (out.length > limit) throw tooLarge(limit);
  return out;
}

/** `deflate` is zlib-wrapped by the RFC, raw in some clients' hands: accept both. */
function inflateLenient(body: Buffer, limit: number): Buffer {
  try {
    return inflateSync(body, { maxOutputLength: limit });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw err;
    return inflateRawSync(body, { maxOutputLength: limit });
  }
}

/** Applies the codings again, in their original order. */
export function encodeContent(body: Buffer, codings: readonly string[]): Buffer {
  let out = body;
  for (const coding of codings) {
    if (coding === 'br') {
      out = brotliCompressSync(out, {
        params: { [zlib.BROTLI_PARAM_QUALITY]: 5, [zlib.BROTLI_PARAM_SIZE_HINT]: out.length },
      });
    } else if (coding === 'deflate') out = deflateSync(out);
    else out = gzipSync(out);
  }
  return out;
}
