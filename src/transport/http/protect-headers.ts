// The request headers shared by /api/protect and /file/protect: data set type, body encoding, dialect.

import type { IncomingMessage } from 'node:http';
import { DpgError } from '../../core/errors.ts';
import { parseDataSetType, type DataSetType } from '../../core/types.ts';

export type BodyEncoding = 'utf-8' | 'base64';

function single(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  if (Array.isArray(value)) throw new DpgError('INVALID_REQUEST', `Header ${name} is given more than once`);
  const trimmed = value?.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** X-Data-Set-Type, checked against what the endpoint takes (LIST only on /file/protect). */
export function dataSetTypeHeader(req: IncomingMessage, fallback: DataSetType, accepted: readonly DataSetType[]): DataSetType {
  const text = single(req, 'x-data-set-type');
  if (text === undefined) return fallback;
  const type = parseDataSetType(text);
  if (type === undefined) throw new DpgError('INVALID_REQUEST', 'Header X-Data-Set-Type must be JSON, XML, SQL or LIST');
  if (!accepted.includes(type)) {
    throw new DpgError('UNSUPPORTED_DATA_SET_TYPE', `This endpoint takes ${accepted.join(', ')}; use /file/protect for ${type}`);
  }
  return type;
}

export function bodyEncodingHeader(req: IncomingMessage): BodyEncoding {
  const text = single(req, 'x-body-encoding')?.toLowerCase();
  if (text === undefined || text === 'utf-8' || text === 'utf8') return 'utf-8';
  if (text === 'base64') return 'base64';
  throw new DpgError('INVALID_REQUEST', 'Header X-Body-Encoding must be utf-8 or base64');
}

export function sqlDialectHeader(req: IncomingMessage): string | undefined {
  return single(req, 'x-sql-dialect');
}

/** The media type of Content-Type, lower case and without parameters. */
export function mediaType(req: IncomingMessage): string | undefined {
  const value = req.headers['content-type'];
  if (value === undefined) return undefined;
  return value.split(';')[0].trim().toLowerCase();
}

/** Decodes UTF-8 strictly: invalid byte sequences are an error, not replacement characters. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
export function decodeUtf8(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new DpgError('INVALID_REQUEST', `${what} is not valid UTF-8`);
  }
}
