// Which other methods the upstream may run a request as. Frameworks let a client override the method
// it sent: headers (Express method-override, Symfony, ASP.NET, Google APIs), a `_method` query
// parameter (Symfony, Laravel), a `_method` field of a POST body (Rails, Symfony and Laravel forms;
// Laravel JSON too). A route limited to PUT would otherwise be stepped around by a POST that the
// upstream runs as a PUT. The route table matches a request under each of these methods as well as
// its own (routes.ts `alsoMethods`): it is protected if either matches.

import type { IncomingHttpHeaders } from 'node:http';
import { ANY_METHOD } from './routes.ts';

const OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'] as const;
const NONE: readonly string[] = [];
const ANY: readonly string[] = [ANY_METHOD];

/**
 * The methods a request may also be run as: each comma-separated value of the override headers and
 * of `_method` query parameters, upper case; ANY_METHOD for a POST whose body (a form, multipart
 * form or JSON, not read yet when routes are matched) may carry `_method` itself.
 */
export function overrideMethods(method: string, headers: IncomingHttpHeaders, query: string | undefined, mediaType: string): readonly string[] {
  if (method === 'POST' && mayCarryMethodField(mediaType)) return ANY;
  let out: string[] | undefined;
  const add = (value: string): void => {
    for (const part of value.split(',')) {
      const m = part.trim().toUpperCase();
      if (m !== '' && m !== method) (out ??= []).push(m);
    }
  };
  for (const name of OVERRIDE_HEADERS) {
    const value = headers[name];
    if (value !== undefined) add(Array.isArray(value) ? value.join(',') : value);
  }
  if (query !== undefined && query !== '' && (query.includes('%') || /method/i.test(query))) {
    for (const value of methodParams(query)) add(value);
  }
  return out ?? NONE;
}

/** Body types a framework reads `_method` from: forms (urlencoded, multipart) and JSON (Laravel). */
function mayCarryMethodField(mediaType: string): boolean {
  return (
    mediaType === 'application/x-www-form-urlencoded' ||
    mediaType === 'multipart/form-data' ||
    mediaType === 'application/json' ||
    mediaType.endsWith('+json')
  );
}

/**
 * Values of the query parameters a server reads as `_method`: names compared after decoding, in
 * lower case, and as PHP reads them (`.method` is PHP's `_method`). Parameters are split on `&`
 * and `;` (older parsers split on both).
 */
function methodParams(query: string): string[] {
  const values: string[] = [];
  for (const pair of query.split(/[&;]/)) {
    const eq = pair.indexOf('=');
    if (eq === -1) continue;
    const name = decode(pair.slice(0, eq)).toLowerCase();
    if (name === '_method' || name === '.method') values.push(decode(pair.slice(eq + 1)));
  }
  return values;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
