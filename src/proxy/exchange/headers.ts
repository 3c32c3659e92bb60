// Header hygiene for both directions: hop-by-hop headers (RFC 9110 §7.6.1, plus the ones a
// Connection header lists) belong to one connection and are never forwarded.

import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  // Expect is answered by the proxy itself (100 Continue) and undici refuses to send it.
  'expect',
]);

type AnyHeaders = IncomingHttpHeaders | Record<string, string | string[] | undefined>;

/** Extra names a Connection header lists; none (no Set per request) for the usual `keep-alive` / `close`. */
function connectionListed(headers: AnyHeaders): Set<string> | undefined {
  const c = headers.connection;
  if (c === undefined) return undefined;
  let listed: Set<string> | undefined;
  for (const v of Array.isArray(c) ? c : [c]) listed = listedIn(v, listed);
  return listed;
}

/** A copy without hop-by-hop headers; `host` is replaced when given. Header names are lower case. */
export function endToEndHeaders(headers: AnyHeaders, host?: string): Record<string, string | string[]> {
  const listed = connectionListed(headers);
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const name in headers) {
    const value = headers[name];
    // HTTP/2 pseudo-headers (`:path`, `:authority` …) are that connection's framing, like a request line.
    if (value === undefined || HOP_BY_HOP.has(name) || listed?.has(name) || name.charCodeAt(0) === 0x3a) continue;
    out[name] = value;
  }
  if (host !== undefined) out.host = host;
  return out;
}

/**
 * Response headers as undici reads them (name, value, name, value … as bytes), without the
 * hop-by-hop ones, as the flat list ServerResponse.writeHead takes: no object is built per
 * response, and repeated headers (Set-Cookie) stay as the upstream sent them. `bodiless` (a 204
 * or 304 whose body is dropped) leaves out Content-Length too.
 */
export function endToEndRawHeaders(raw: readonly Buffer[], bodiless: boolean): string[] {
  const names: string[] = new Array<string>(raw.length >> 1);
  let listed: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toString('latin1').toLowerCase();
    names[i >> 1] = name;
    if (name === 'connection') listed = listedIn(raw[i + 1].toString('latin1'), listed);
  }
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = names[i >> 1];
    if (HOP_BY_HOP.has(name) || listed?.has(name) || (bodiless && name === 'content-length')) continue;
    out.push(name, raw[i + 1].toString('latin1'));
  }
  return out;
}

/** Adds the names one Connection header value lists (beyond the hop-by-hop ones) to `listed`. */
function listedIn(value: string, listed: Set<string> | undefined): Set<string> | undefined {
  for (const t of value.split(',')) {
    const name = t.trim().toLowerCase();
    if (!HOP_BY_HOP.has(name)) (listed ??= new Set<string>()).add(name);
  }
  return listed;
}

/** Response headers from the upstream, ready for ServerResponse.writeHead. */
export function responseHeaders(headers: AnyHeaders): OutgoingHttpHeaders {
  return endToEndHeaders(headers);
}

/**
 * True when an app's request carries a body: over HTTP/2, when its HEADERS frame did not end the
 * stream (RFC 9113 §8.1); over HTTP/1.1, by its headers (hasRequestBody).
 */
export function carriesBody(req: { readonly headers: IncomingHttpHeaders; readonly httpVersionMajor?: number; readonly stream?: { readonly endAfterHeaders: boolean } }): boolean {
  if (req.httpVersionMajor === 2 && req.stream !== undefined) return !req.stream.endAfterHeaders;
  return hasRequestBody(req.headers);
}

/** True when the request carries a body (RFC 9112 §6.3: Content-Length or Transfer-Encoding). */
export function hasRequestBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  if (length !== undefined) return length !== '0';
  return headers['transfer-encoding'] !== undefined;
}

/** Statuses that never carry a body (RFC 9110): whatever an upstream sends with them is dropped. */
export function hasNoBody(status: number): boolean {
  return status === 204 || status === 304 || (status >= 100 && status < 200);
}
