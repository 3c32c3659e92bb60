// A look at the next request head on a plain-text connection: could a server read it as HTTP/1.x,
// and which host does it name? Only to choose between the full HTTP path (every request parsed by
// Node's strict parser, routed and protected as the forward proxy does, or refused) and the
// request-level relay (request-relay.ts: this head and its body byte for byte, then the next head
// is read here again). Two readings, on purpose far apart:
//
// - LENIENT ("could this be a request?"): what the most forgiving common server accepts. Python's
//   http.server (under Flask/werkzeug) splits the request line on ANY whitespace — tab, VT, FF, CR,
//   0x1c–0x1f, 0x85, 0xa0 — after skipping leading whitespace, takes any `HTTP/…` version
//   (`HTTP/1.10`, `HTTP/01.1`), strips stray CRs, and answers HTTP/0.9 (`GET /path`); HTTP/1.0
//   needs no Host. Anything that reads as a request this way is HTTP here.
// - CLEAR ("read the same by every server"): `METHOD SP /target SP HTTP/1.0|1.1 CRLF`, header lines
//   `name: value CRLF` in visible ASCII, exactly one well-formed Host, no Transfer-Encoding, at most
//   one Content-Length. Only a clear head naming an unrouted host may be relayed; every other HTTP
//   head takes the full path, which refuses what it cannot read. Doubt never ends in a relay.
//   Bytes after the body a clear head declares are the next head, read here in turn: nothing on
//   the connection goes by unread (issue 16: a keep-alive connection once spliced after its first
//   head carried a later request for the routed host in clear).
//
// Bytes that cannot start a request line (a first byte that is not a token character after the
// whitespace, or a token followed by something other than whitespace: TLS, PostgreSQL, MongoDB and
// other binary protocols) are "not HTTP" at once, so client-first protocols are not held waiting.
//
// Every loop below visits each byte a bounded number of times: the reading is linear in the input
// (review finding 10: a backtracking header regex took 236 ms on one 16 KB hostile line).

/** Longest first line we wait for before deciding. */
const MAX_REQUEST_LINE = 8 * 1024;

export type HeadResult =
  | { readonly kind: 'need-more' }
  /** HTTP/2 with prior knowledge: frames the gateway cannot read. */
  | { readonly kind: 'h2-preface' }
  /** Clearly not HTTP/1.x: another protocol (spliced, unless its destination is routed). */
  | { readonly kind: 'not-http' }
  /**
   * HTTP/1.x as some server could read it, but not clear: anything about it is unusual
   * (lenient-only request line, absolute-form, no Host, folded, duplicate or malformed headers).
   */
  | { readonly kind: 'http'; readonly host: undefined; readonly clear: false }
  | ClearHead;

/** A head every server reads alike, and how far the request it starts reaches. */
export interface ClearHead {
  readonly kind: 'http';
  readonly clear: true;
  /** The Host (lower case, no port, no brackets). */
  readonly host: string;
  readonly method: string;
  /** Bytes from the start of the data to the end of the head (leading CRLFs, request line, headers, blank line). */
  readonly headLength: number;
  /** Bytes of the body after it (its Content-Length; 0 without one). */
  readonly bodyLength: number;
  /** An Upgrade header: the connection may stop being HTTP after the answer (the full path decides). */
  readonly upgrade: boolean;
}

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const HOST_VALUE = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/;
/** The request line every server reads alike. Linear: no two parts can match the same bytes. */
const CLEAR_REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ \/[!-~]* HTTP\/1\.[01]$/;
const UNCLEAR: HeadResult = { kind: 'http', host: undefined, clear: false };
const NEED_MORE: HeadResult = { kind: 'need-more' };
const NOT_HTTP: HeadResult = { kind: 'not-http' };

/** RFC 9110 tchar: the bytes of a method (and of a header name). */
const TCHAR = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TCHAR[c.charCodeAt(0)] = 1;
for (let c = 0x30; c <= 0x39; c++) TCHAR[c] = 1;
for (let c = 0x41; c <= 0x5a; c++) TCHAR[c] = 1;
for (let c = 0x61; c <= 0x7a; c++) TCHAR[c] = 1;

/** Whitespace to Python's str.split() on a latin-1 request line: the widest set a server splits on. */
const SEPARATOR = new Uint8Array(256);
for (const c of [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0]) SEPARATOR[c] = 1;

/**
 * `maxHead`: bytes of the whole head we read for the Host header; a longer head is HTTP, not clear.
 */
export function peekHttpHead(data: Buffer, maxHead: number): HeadResult {
  const prefix = Math.min(data.length, H2_PREFACE.length);
  if (data.subarray(0, prefix).equals(H2_PREFACE.subarray(0, prefix))) {
    return prefix === H2_PREFACE.length ? { kind: 'h2-preface' } : NEED_MORE;
  }
  // Lenient servers skip leading whitespace (RFC 9112 §2.2: at least empty lines).
  let start = 0;
  while (start < data.length && SEPARATOR[data[start]] === 1) start++;
  let methodEnd = start;
  while (methodEnd < data.length && TCHAR[data[methodEnd]] === 1) methodEnd++;
  if (methodEnd === data.length) return data.length < MAX_REQUEST_LINE ? NEED_MORE : UNCLEAR;
  // A request line starts with a method token and whitespace; anything else is another protocol.
  if (methodEnd === start || SEPARATOR[data[methodEnd]] !== 1) return NOT_HTTP;

  const eol = data.indexOf(0x0a, methodEnd);
  // A token, whitespace, then 8 KB without a line end: the full parser refuses it (414/400).
  if (eol === -1) return data.length - start < MAX_REQUEST_LINE ? NEED_MORE : UNCLEAR;
  const method = data.toString('latin1', start, methodEnd);
  if (!couldBeRequestLine(method, data, methodEnd, eol)) return NOT_HTTP;

  // The clear reading: only CR LF pairs before the line, the line itself, CRLF at its end.
  const leadingCrLf = start % 2 === 0 && isCrLfRun(data, 0, start);
  const line = eol > 0 && data[eol - 1] === 0x0d ? data.toString('latin1', start, eol - 1) : undefined;
  if (!leadingCrLf || line === undefined || !CLEAR_REQUEST_LINE.test(line)) return UNCLEAR;

  const headEnd = findHeadEnd(data, eol + 1);
  if (headEnd === -1) return data.length - start < maxHead ? NEED_MORE : UNCLEAR;
  return readHeaders(data, method, eol + 1, headEnd);
}

/**
 * The lenient test of a complete first line (`data[methodEnd..eol)`, after the method): its words,
 * split on any run of whitespace, include an `HTTP/…` version anywhere (servers that allow spaces
 * in the target, like nginx once did, take the last), or it is an HTTP/0.9 request: one word after
 * `GET` (any case), or one word that is an absolute path.
 */
function couldBeRequestLine(method: string, data: Buffer, methodEnd: number, eol: number): boolean {
  let words = 0;
  let firstWordStart = -1;
  let i = methodEnd;
  while (i < eol) {
    while (i < eol && SEPARATOR[data[i]] === 1) i++;
    if (i === eol) break;
    const wordStart = i;
    while (i < eol && SEPARATOR[data[i]] !== 1) i++;
    words++;
    if (words === 1) firstWordStart = wordStart;
    if (i - wordStart >= 5 && startsWithHttpSlash(data, wordStart)) return true;
  }
  if (words !== 1) return false;
  return method.toUpperCase() === 'GET' || data[firstWordStart] === 0x2f;
}

function startsWithHttpSlash(data: Buffer, at: number): boolean {
  return (data[at] | 0x20) === 0x68 && (data[at + 1] | 0x20) === 0x74 && (data[at + 2] | 0x20) === 0x74 && (data[at + 3] | 0x20) === 0x70 && data[at + 4] === 0x2f;
}

function isCrLfRun(data: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i += 2) if (data[i] !== 0x0d || data[i + 1] !== 0x0a) return false;
  return true;
}

/**
 * The header lines of a head whose request line is clear: each `name: value` ended by CRLF, the
 * name a token, the value visible ASCII, space or tab; exactly one Host, well formed. The framing
 * must be one plain reading too — no Transfer-Encoding, at most one Content-Length — so that where
 * the body ends, and the next head starts, is where every server sees it.
 */
function readHeaders(data: Buffer, method: string, from: number, headEnd: number): HeadResult {
  let host: string | undefined;
  let hosts = 0;
  let length: number | undefined;
  let upgrade = false;
  let at = from;
  const end = headEnd - 2; // the final CRLF
  while (at < end) {
    const lf = data.indexOf(0x0a, at);
    if (lf === -1 || lf > end || data[lf - 1] !== 0x0d) return UNCLEAR; // bare LF: servers differ
    const lineEnd = lf - 1;
    let colon = at;
    while (colon < lineEnd && TCHAR[data[colon]] === 1) colon++;
    // Folded lines, spaces before the colon, an empty name: unusual enough to read in full.
    if (colon === at || colon === lineEnd || data[colon] !== 0x3a) return UNCLEAR;
    // The value without the optional whitespace around it, trimmed by loops (no regex backtracking).
    let valueStart = colon + 1;
    let valueEnd = lineEnd;
    while (valueStart < valueEnd && (data[valueStart] === 0x20 || data[valueStart] === 0x09)) valueStart++;
    while (valueEnd > valueStart && (data[valueEnd - 1] === 0x20 || data[valueEnd - 1] === 0x09)) valueEnd--;
    for (let i = valueStart; i < valueEnd; i++) {
      const c = data[i];
      if ((c < 0x20 && c !== 0x09) || c > 0x7e) return UNCLEAR;
    }
    const size = colon - at;
    const name = size === 4 || size === 7 || size === 14 || size === 17 ? data.toString('latin1', at, colon).toLowerCase() : '';
    if (name === 'host') {
      hosts++;
      const h = HOST_VALUE.exec(data.toString('latin1', valueStart, valueEnd));
      if (!h || (h[3] !== undefined && Number(h[3]) > 65535)) return UNCLEAR;
      host = (h[1] ?? h[2]).toLowerCase();
    } else if (name === 'transfer-encoding') return UNCLEAR;
    else if (name === 'upgrade') upgrade = true;
    else if (name === 'content-length') {
      const value = data.toString('latin1', valueStart, valueEnd);
      if (length !== undefined || !/^\d{1,15}$/.test(value)) return UNCLEAR;
      length = Number(value);
    }
    at = lf + 1;
  }
  // No Host: the server picks one (HTTP/1.0 allows it); two: servers disagree on which counts.
  if (hosts !== 1 || host === undefined) return UNCLEAR;
  return { kind: 'http', host, clear: true, method, headLength: headEnd, bodyLength: length ?? 0, upgrade };
}

/** Index just past the blank line that ends the head, or -1. */
function findHeadEnd(data: Buffer, from: number): number {
  for (let i = data.indexOf(0x0a, from - 1); i !== -1 && i + 1 < data.length; i = data.indexOf(0x0a, i + 1)) {
    if (data[i + 1] === 0x0a) return i + 2;
    if (data[i + 1] === 0x0d && i + 2 < data.length && data[i + 2] === 0x0a) return i + 3;
  }
  return -1;
}
