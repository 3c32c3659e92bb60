// What an HTTP/2 request must be before the proxy's readers (request-target.ts) take it as they take
// an HTTP/1.1 one. HTTP/2 names the host twice, in `:authority` and possibly a Host field; a server
// may route by either (RFC 9113 §8.3.1 lets an intermediary choose), so the two must agree or the
// request is refused. The reading then goes on with one Host header, as in HTTP/1.1.

import type { IncomingHttpHeaders } from 'node:http2';
import { readAuthority } from '../reading/canonical-host.ts';

/** Stands in for the default port when two spellings of a host are compared (both get the same one). */
const ANY_PORT = 0;

/**
 * Checks an h2 request's pseudo-headers and host, and leaves `headers.host` holding the one host it
 * names (from `:authority`). Returns a refusal reason, or undefined when it may be read on.
 */
export function readH2Request(headers: IncomingHttpHeaders, connectionScheme: 'http' | 'https'): string | undefined {
  const method = headers[':method'];
  if (method === 'CONNECT') return 'CONNECT inside an HTTP/2 connection is not supported';
  const scheme = headers[':scheme'];
  if (typeof scheme !== 'string' || scheme.toLowerCase() !== connectionScheme) return `An HTTP/2 request on this connection must have :scheme ${connectionScheme}`;
  const authority = headers[':authority'];
  const host = headers.host;
  if (Array.isArray(host)) return 'More than one Host header';
  if (typeof authority === 'string' && host !== undefined) {
    const a = readAuthority(authority, ANY_PORT);
    const h = readAuthority(host, ANY_PORT);
    if (a === undefined || h === undefined || a.host !== h.host || a.port !== h.port) return 'The :authority and Host of an HTTP/2 request name different hosts';
  }
  if (typeof authority === 'string') headers.host = authority;
  return undefined;
}
