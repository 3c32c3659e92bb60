// Which data set type a body is read as. A body on a routed request is read as a type the engine
// protects, or it is not forwarded: a type switch (`text/plain`, no Content-Type, a `+json` type
// the route did not name) must not switch protection off.

import { DpgError, type ErrorCode } from '../../core/errors.ts';
import type { DataSetType } from '../../core/types.ts';

/**
 * Input the proxy refuses to read: ambiguous between servers (a form with `;`, a JSON document
 * sent as a form, a query with `;`) or of a type no route phase can protect. Unlike a protection
 * failure, `onError: passthrough` never forwards it: an attacker could pick it to get through.
 */
export class RefusedInputError extends DpgError {
  constructor(code: Extract<ErrorCode, 'MALFORMED_DATA_SET' | 'UNSUPPORTED_DATA_SET_TYPE'>, detail: string) {
    super(code, detail);
    this.name = 'RefusedInputError';
  }
}

/**
 * A client-sent media type (or charset) as it may appear in an error message: quoted only when it
 * is a plain token (`application/vnd.x+json`), never arbitrary client text.
 */
export function printableType(value: string): string {
  return /^[a-z0-9!#$&^_.+-]{1,60}(?:\/[a-z0-9!#$&^_.+-]{1,60})?$/.test(value) ? value : '(not shown)';
}

/** A data set type, or `FORM` for `application/x-www-form-urlencoded` fields. */
export type BodyKind = DataSetType | 'FORM';

/** Media type → data set type (DESIGN §9): JSON and `+json`, XML and `+xml`, CSV as LIST, SQL, forms. */
export function inferBodyKind(mediaType: string): BodyKind | undefined {
  if (mediaType === 'application/json' || mediaType.endsWith('+json')) return 'JSON';
  if (mediaType === 'application/xml' || mediaType === 'text/xml' || mediaType.endsWith('+xml')) return 'XML';
  if (mediaType === 'text/csv') return 'LIST';
  if (mediaType === 'application/x-www-form-urlencoded') return 'FORM';
  if (mediaType === 'application/sql') return 'SQL';
  return undefined;
}

/**
 * Types that say nothing about the body: none at all, `text/plain`, `application/octet-stream`.
 * Many upstreams parse such a body anyway (Flask `get_json(force=True)`, `JSON.parse` of the raw
 * body), so it is read as the route's type, or by its first byte, and never passed on unread.
 */
export function isUntypedMediaType(mediaType: string): boolean {
  return mediaType === '' || mediaType === 'text/plain' || mediaType === 'application/octet-stream';
}

/**
 * JSON for a body starting with `{` or `[`, XML for `<` (after a byte order mark and whitespace);
 * else undefined. The first character is read in the encoding JSON and XML readers detect
 * themselves — UTF-8, UTF-16 and UTF-32, marked or not (Python's `json.loads` of bytes, XML 1.0
 * Appendix F), and EBCDIC `<?xm` — so such a body is read (and then refused by its encoding,
 * body-charset.ts), never passed on as other content.
 */
export function sniffBodyKind(body: Buffer): BodyKind | undefined {
  if (body.length >= 4 && body[0] === 0x4c && body[1] === 0x6f && body[2] === 0xa7 && body[3] === 0x94) return 'XML';
  const { offset, width, bigEndian } = textLayoutOf(body);
  for (let i = offset; i + width <= body.length; i += width) {
    const unit = width === 1 ? body[i] : width === 2 ? (bigEndian ? body.readUInt16BE(i) : body.readUInt16LE(i)) : bigEndian ? body.readUInt32BE(i) : body.readUInt32LE(i);
    if (unit === 0x20 || unit === 0x09 || unit === 0x0a || unit === 0x0d) continue;
    if (unit === 0x7b || unit === 0x5b) return 'JSON';
    if (unit === 0x3c) return 'XML';
    return undefined;
  }
  return undefined;
}

/** Where a body's text starts and how wide and in which order its code units are, by its mark or its NUL pattern. */
function textLayoutOf(body: Buffer): { offset: number; width: 1 | 2 | 4; bigEndian: boolean } {
  const b = (i: number): number => (i < body.length ? body[i] : -1);
  if (b(0) === 0xff && b(1) === 0xfe && b(2) === 0 && b(3) === 0) return { offset: 4, width: 4, bigEndian: false };
  if (b(0) === 0 && b(1) === 0 && b(2) === 0xfe && b(3) === 0xff) return { offset: 4, width: 4, bigEndian: true };
  if (b(0) === 0xff && b(1) === 0xfe) return { offset: 2, width: 2, bigEndian: false };
  if (b(0) === 0xfe && b(1) === 0xff) return { offset: 2, width: 2, bigEndian: true };
  if (b(0) === 0xef && b(1) === 0xbb && b(2) === 0xbf) return { offset: 3, width: 1, bigEndian: false };
  if (b(0) === 0 && b(1) === 0 && b(2) === 0 && b(3) > 0) return { offset: 0, width: 4, bigEndian: true };
  if (b(0) > 0 && b(1) === 0 && b(2) === 0 && b(3) === 0) return { offset: 0, width: 4, bigEndian: false };
  if (b(0) === 0 && b(1) > 0) return { offset: 0, width: 2, bigEndian: true };
  if (b(0) > 0 && b(1) === 0) return { offset: 0, width: 2, bigEndian: false };
  return { offset: 0, width: 1, bigEndian: false };
}

export interface BodyKindInput {
  /** The phase's `dataSetType`, when the route fixes one. */
  readonly fixed?: BodyKind;
  /** The route's `match.contentType` (what the route expects), when it names one. */
  readonly routeContentType?: string;
  /** The request's media type, lower case, without parameters ('' when absent). */
  readonly mediaType: string;
  /** The decoded body (for untyped bodies only). */
  readonly body: Buffer;
}

/**
 * The type a non-empty body is read as, in this order: the phase's fixed `dataSetType`; the type
 * its own Content-Type names (`+json`/`+xml` included, even when the route named another type: the
 * engine protects it all the same); for an untyped body, the type the route's `contentType` names,
 * else JSON or XML by its first byte. Undefined: the body is other content (415, unless the route
 * opts into passing it on with `otherContent: passthrough`).
 */
export function bodyKindOf(input: BodyKindInput): BodyKind | undefined {
  if (input.fixed !== undefined) return input.fixed;
  const declared = inferBodyKind(input.mediaType);
  if (declared !== undefined) return declared;
  if (!isUntypedMediaType(input.mediaType)) return undefined;
  const routeKind = input.routeContentType === undefined ? undefined : inferBodyKind(input.routeContentType);
  return routeKind ?? sniffBodyKind(input.body);
}
