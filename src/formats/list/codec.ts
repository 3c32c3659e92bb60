// The LIST data type: a streaming protect Transform (bytes in, bytes out, bounded memory) for
// /file/protect and the CLI, and a DocumentCodec over whole strings built on the same protector.

import { Transform } from 'node:stream';
import { DpgError } from '../../core/errors.ts';
import type { CodecOptions, DocumentCodec, FieldResolver } from '../codec.ts';
import { ListProtector, type ListOptions } from './protector.ts';

export type { ListOptions } from './protector.ts';

/**
 * Protects LIST bytes as they stream: each chunk's complete rows are protected and written
 * before the next chunk is read. Memory is bounded by the chunk size plus one record
 * (ListOptions limits). Errors (DpgError) destroy the stream; output already pushed stays pushed,
 * so callers must treat an errored stream's output as void.
 */
export function createListProtectStream(resolver: FieldResolver, options: ListOptions = {}): Transform {
  const protector = new ListProtector(resolver, options);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      let out: string;
      try {
        out = protector.write(chunk);
      } catch (err) {
        callback(err as Error);
        return;
      }
      if (out.length > 0) this.push(Buffer.from(out, 'utf8'));
      callback();
    },
    flush(callback) {
      let out: string;
      try {
        out = protector.end();
      } catch (err) {
        callback(err as Error);
        return;
      }
      if (out.length > 0) this.push(Buffer.from(out, 'utf8'));
      callback();
    },
  });
}

/** A LIST DocumentCodec with its own limits (the default `listCodec` uses the defaults). */
export function createListCodec(options: ListOptions = {}): DocumentCodec {
  return {
    type: 'LIST',
    protect(input: string | unknown, resolver: FieldResolver, codecOptions: CodecOptions): string {
      const bytes = toBytes(input);
      const protector = new ListProtector(resolver, {
        ...options,
        delimiter: codecOptions.listDelimiter ?? options.delimiter,
        requireCertainDelimiter: codecOptions.listRequireCertainDelimiter ?? options.requireCertainDelimiter,
      });
      return protector.write(bytes) + protector.end();
    },
  };
}

/** Whole LIST documents in memory (text in, text out). */
export const listCodec: DocumentCodec = createListCodec();

function toBytes(input: unknown): Uint8Array {
  if (typeof input === 'string') return Buffer.from(input, 'utf8');
  if (input instanceof Uint8Array) return input;
  throw new DpgError('MALFORMED_DATA_SET', 'LIST data set must be text');
}
