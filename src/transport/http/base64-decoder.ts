// Streaming base64 decoding for /file/protect data: strict alphabet, whitespace ignored, carried
// remainder between chunks, so a large upload is decoded without being held whole.

import { Transform, type TransformCallback } from 'node:stream';
import { DpgError } from '../../core/errors.ts';

// Every pattern here is linear in its input (a global character class, an anchored class run):
// request data never meets a pattern that can backtrack over it. Padding is found with indexOf.
const WHITESPACE = /[\r\n\t ]/g;
const BASE64_BODY = /^[A-Za-z0-9+/_-]*$/;
const PAD = '=';
const MAX_PADDING = 2;

function invalid(): DpgError {
  return new DpgError('INVALID_REQUEST', 'The data is not valid base64 (X-Body-Encoding: base64)');
}

/**
 * Splits `text` at its first '=': the data before it and how many padding characters follow.
 * Throws when anything but at most two '=' follows the first one (padding ends the data).
 */
function splitPadding(text: string): { body: string; padding: number } {
  const first = text.indexOf(PAD);
  if (first < 0) return { body: text, padding: 0 };
  const padding = text.length - first;
  // The length is checked before the characters, so the scan below covers at most two.
  if (padding > MAX_PADDING) throw invalid();
  for (let i = first + 1; i < text.length; i++) if (text[i] !== PAD) throw invalid();
  return { body: text.slice(0, first), padding };
}

/** Decodes a whole base64 string strictly; throws INVALID_REQUEST rather than skipping bad characters. */
export function decodeBase64Strict(text: string): Buffer {
  const { body } = splitPadding(text.replace(WHITESPACE, ''));
  if (!BASE64_BODY.test(body) || body.length % 4 === 1) throw invalid();
  return Buffer.from(body, body.includes('-') || body.includes('_') ? 'base64url' : 'base64');
}

export class Base64DecodeStream extends Transform {
  private pending = '';
  /** Padding characters seen so far; above zero the data has ended and only more '=' may follow. */
  private padding = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.decodeChunk(chunk.toString('latin1').replace(WHITESPACE, ''));
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  private decodeChunk(compact: string): void {
    if (compact.length === 0) return;
    if (this.padding > 0) {
      // After the data ended, a later chunk may only finish the padding ("…=" then "=").
      if (this.padding + compact.length > MAX_PADDING || compact !== PAD.repeat(compact.length)) throw invalid();
      this.padding += compact.length;
      return;
    }
    const { body, padding } = splitPadding(this.pending + compact);
    if (!BASE64_BODY.test(body) || (padding > 0 && body.length % 4 === 1)) throw invalid();
    this.padding = padding;
    const whole = padding > 0 ? body.length : body.length - (body.length % 4);
    this.pending = body.slice(whole);
    if (whole > 0) this.push(Buffer.from(body.slice(0, whole), 'base64'));
  }

  override _flush(callback: TransformCallback): void {
    if (this.pending.length % 4 === 1) {
      callback(invalid());
      return;
    }
    if (this.pending.length > 0) this.push(Buffer.from(this.pending, 'base64'));
    callback();
  }
}
