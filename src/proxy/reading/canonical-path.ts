// One reading of a request path. The gateway and the upstream must agree on which path a request
// names, or a route can be stepped around (`/v1%2Fcustomers`, `/v1\customers`, `//x/v1/customers`,
// `/v1/customers#`). So a request target is either put in one canonical form — the form that is
// then sent upstream, so the upstream reads what the routes matched — or refused when it stays
// ambiguous between common servers. Used by every listener (forward, reverse, inside CONNECT
// tunnels); a listener that only knows a raw request target calls `readPath` too.

/** A request target read in one way. */
export interface PathReading {
  readonly ok: true;
  /**
   * The canonical path, without the query: escapes of unreserved characters decoded, other escapes
   * in upper case, dot segments resolved. This is what goes upstream.
   */
  readonly path: string;
  /** The query string as sent, without `?`; undefined when there is none. */
  readonly query: string | undefined;
  /** `path` as lenient servers read it (`;params` dropped, `//` merged): what route globs match. */
  readonly routePath: string;
}

/** Why a request target was refused; `reason` never quotes the target. */
export interface PathRefusal {
  readonly ok: false;
  readonly reason: string;
}

/** The canonical request target: `path` plus `?query` when there was one. */
export function targetOf(reading: PathReading): string {
  return reading.query === undefined ? reading.path : `${reading.path}?${reading.query}`;
}

const refuse = (reason: string): PathRefusal => ({ ok: false, reason });

/** Bytes a request target may hold (RFC 3986 characters): visible ASCII, no space. */
const TARGET_CHARS = /^[\x21-\x7e]*$/;
const HEX = /^[0-9A-Fa-f]{2}$/;

function isUnreserved(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    (code >= 0x30 && code <= 0x39) || // 0-9
    code === 0x2d || // -
    code === 0x2e || // .
    code === 0x5f || // _
    code === 0x7e // ~
  );
}

/**
 * Reads an origin-form request target (`/path?query`). Refused, with nothing sent upstream:
 * - bytes outside visible ASCII (NUL, controls, space, DEL, raw non-ASCII);
 * - a fragment (`#`): a request target has none, yet parsers differ on stripping it;
 * - `\` raw or encoded (`%5C`), and an encoded `/` (`%2F`): some servers read them as `/`, some not;
 * - a leading `//`, also once dot segments are resolved (`/a/..//x`): URL parsers (Node's `URL`,
 *   Python's `urlsplit`) read the first segment as a host;
 * - encoded control bytes in the path (`%00`–`%1F`, `%7F`) and `%00` anywhere;
 * - a double-encoded escape (`%25` followed by two hex digits): servers that decode twice differ;
 * - a malformed escape (`%` not followed by two hex digits);
 * - a dot segment hidden behind parameters (`..;x`, `.;`): servlet containers resolve it, others not;
 * - anything not starting with `/` (asterisk-form `*` included).
 */
export function readPath(target: string): PathReading | PathRefusal {
  if (!TARGET_CHARS.test(target)) return refuse('The request target holds a control, space or non-ASCII byte');
  if (target.includes('#')) return refuse('The request target holds a fragment (#)');
  if (target.includes('\\')) return refuse('The request target holds a backslash');
  if (!target.startsWith('/')) return refuse('The request target must start with /');
  if (target.startsWith('//')) return refuse('The request path starts with //');
  const q = target.indexOf('?');
  const rawPath = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? undefined : target.slice(q + 1);
  if (query !== undefined && query.includes('%')) {
    if (query.includes('%00')) return refuse('The query holds an encoded NUL byte');
    if (/%(?![0-9A-Fa-f]{2})/.test(query)) return refuse('The query holds a malformed percent-escape');
  }

  let decoded = rawPath;
  if (rawPath.includes('%')) {
    let out = '';
    let i = 0;
    while (i < rawPath.length) {
      const ch = rawPath[i];
      if (ch !== '%') {
        out += ch;
        i++;
        continue;
      }
      const hex = rawPath.slice(i + 1, i + 3);
      if (!HEX.test(hex)) return refuse('The request path holds a malformed percent-escape');
      const code = parseInt(hex, 16);
      if (code === 0x2f || code === 0x5c) return refuse('The request path holds an encoded / or \\');
      if (code < 0x20 || code === 0x7f) return refuse('The request path holds an encoded control byte');
      if (code === 0x25 && HEX.test(rawPath.slice(i + 3, i + 5))) return refuse('The request path holds a double-encoded escape');
      out += isUnreserved(code) ? String.fromCharCode(code) : `%${hex.toUpperCase()}`;
      i += 3;
    }
    decoded = out;
    // `%25%41%41` decodes to `%25AA`: the escape made double by decoding is refused like one sent so.
    if (/%25[0-9A-Fa-f]{2}/.test(decoded)) return refuse('The request path holds a double-encoded escape');
  }

  // Dot segments only exist after a `/.`; most paths have none and are already canonical.
  if (!decoded.includes('/.')) return { ok: true, path: decoded, query, routePath: routeView(decoded) };
  const segments = decoded.split('/');
  for (let i = 1; i < segments.length; i++) {
    const s = segments[i];
    if (s.includes(';')) {
      const bare = s.slice(0, s.indexOf(';'));
      if (bare === '.' || bare === '..') return refuse('The request path holds a dot segment with parameters');
    }
  }
  const path = removeDotSegments(segments);
  // `/a/..//x` resolves to `//x`, which a URL parser upstream reads as a host: refused like `//x`.
  if (path.startsWith('//')) return refuse('The request path starts with // once its dot segments are resolved');
  return { ok: true, path, query, routePath: routeView(path) };
}

/** RFC 3986 §5.2.4 over the segments of an absolute path (`segments[0]` is the empty root). */
function removeDotSegments(segments: readonly string[]): string {
  const out: string[] = [];
  const last = segments.length - 1;
  for (let i = 1; i <= last; i++) {
    const s = segments[i];
    if (s === '.' || s === '..') {
      if (s === '..') out.pop();
      if (i === last) out.push(''); // `/a/b/..` → `/a/`
    } else out.push(s);
  }
  return '/' + out.join('/');
}

/**
 * The path as the most lenient common servers read it, for route matching: `;params` dropped from
 * every segment (servlet containers, Spring) and empty segments merged (`//` is one separator to
 * nginx, werkzeug and most routers). Letter case is kept: lenient routes ignore it (routes.ts).
 */
export function routeView(path: string): string {
  const bare = path.includes(';') ? path.replace(/;[^/]*/g, '') : path;
  return bare.includes('//') ? bare.replace(/\/{2,}/g, '/') : bare;
}
