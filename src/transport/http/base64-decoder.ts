// Streaming base64 decoding for /file/protect data: strict alphabet, whitespace ignored, carried
// remainder between chunks, so a large upload is decoded without being held whole.

import { Transform, type TransformCallback } from 'node:stream';
import { DpgError } from '../../core/errors.ts';

const WHITESPACE = /[\r\n\t ]/g;
const BASE64_BODY = /^[A-Za-z0-9+/_-]*$/;

function invalid(): DpgError {
  return new DpgError('INVALID_REQUEST', 'The data is not valid base64 (X-Body-Encoding: base64)');
}

/** Decodes a whole base64 string strictly; throws INVALID_REQUEST rather than skipping bad characters. */
export function decodeBase64Strict(text: string): Buffer {
  const compact = text.replace(WHITESPACE, '');
  const body = compact.replace(/={1,2}$/, '');
  if (!BASE64_BODY.test(body) || body.length % 4 === 1) throw invalid();
  return Buffer.from(body, body.includes('-') || body.includes('_') ? 'base64url' : 'base64');
}

export class Base64DecodeStream extends Transform {
  private pending = '';
  private ended = false;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const text = this.pending + chunk.toString('latin1').replace(WHITESPACE, '');
    if (this.ended && text.length > 0) {
      callback(invalid());
      return;
    }
    let body = text;
    const padding = /=+$/.exec(body);
    if (padding !== null) {
      // Padding ends the data: anything after it is an error (checked above on later chunks).
      if (padding[0].length > 2) {
        callback(invalid());
        return;
      }
      body = body.slice(0, padding.index);
      this.ended = true;
    }
    if (!BASE64_BODY.test(body) || (this.ended && body.length % 4 === 1)) {
      callback(invalid());
      return;
    }
    const whole = this.ended ? body.length : body.length - (body.length % 4);
    this.pending = body.slice(whole);
    if (whole > 0) this.push(Buffer.from(body.slice(0, whole), 'base64'));
    callback();
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
