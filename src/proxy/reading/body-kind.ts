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

/** JSON for a body starting with `{` or `[`, XML for `<` (after a BOM and whitespace); else undefined. */
export function sniffBodyKind(body: Buffer): BodyKind | undefined {
  let i = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  while (i < body.length && (body[i] === 0x20 || body[i] === 0x09 || body[i] === 0x0a || body[i] === 0x0d)) i++;
  const first = body[i];
  if (first === 0x7b || first === 0x5b) return 'JSON';
  if (first === 0x3c) return 'XML';
  return undefined;
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
