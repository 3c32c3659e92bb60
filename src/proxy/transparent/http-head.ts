// A first look at a plain-text connection: is it HTTP/1.x, and which host does its first request
// name? Only to choose between the full HTTP path (every request parsed, routed and protected as the
// forward proxy does) and a byte-for-byte splice. Anything unclear chooses the full path, whose
// parser is strict and refuses what it cannot read: doubt never ends in a splice.

/** Longest first line we wait for before deciding. */
const MAX_REQUEST_LINE = 8 * 1024;

export type HeadResult =
  | { readonly kind: 'need-more' }
  /** HTTP/2 with prior knowledge: frames the gateway cannot read. */
  | { readonly kind: 'h2-preface' }
  /** Not HTTP/1.x: another protocol (spliced, unless its destination is routed). */
  | { readonly kind: 'not-http' }
  /**
   * HTTP/1.x. `host`: the first request's Host (lower case, no port, no brackets), when it has
   * exactly one clean Host header and an origin-form target. `clear` is false when anything about
   * the head is unusual (absolute-form, folded or duplicate headers, malformed Host): full path.
   */
  | { readonly kind: 'http'; readonly host: string | undefined; readonly clear: boolean };

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const METHOD = /^[A-Za-z][A-Za-z_-]{0,31}$/;
const VERSION = /^HTTP\/\d(\.\d)?$/i;
const HOST_VALUE = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/;
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;

/**
 * `maxHead`: bytes of the whole head we read for the Host header; a longer head is HTTP, not clear.
 */
export function peekHttpHead(data: Buffer, maxHead: number): HeadResult {
  const prefix = Math.min(data.length, H2_PREFACE.length);
  if (data.subarray(0, prefix).equals(H2_PREFACE.subarray(0, prefix))) {
    return prefix === H2_PREFACE.length ? { kind: 'h2-preface' } : { kind: 'need-more' };
  }
  // RFC 9112 §2.2: servers may skip empty lines before the request line.
  let start = 0;
  while (start < data.length && (data[start] === 0x0d || data[start] === 0x0a)) start++;
  const eol = data.indexOf(0x0a, start);
  if (eol === -1) {
    if (data.length - start < MAX_REQUEST_LINE) return { kind: 'need-more' };
    // A huge first line: HTTP if it starts like a request (the full parser then refuses it).
    const words = data.subarray(start, start + 64).toString('latin1').split(/[ \t]+/);
    return words.length > 1 && METHOD.test(words[0]) ? { kind: 'http', host: undefined, clear: false } : { kind: 'not-http' };
  }
  const line = data.subarray(start, eol).toString('latin1').replace(/\r$/, '');
  const words = line.split(/[ \t]+/).filter((w) => w !== '');
  const versioned = words.length >= 3 && VERSION.test(words[words.length - 1]);
  // HTTP/0.9 (`GET /path`): no version, no headers; some servers still answer it.
  const simple = words.length === 2 && METHOD.test(words[0]) && words[1].startsWith('/');
  if (!versioned && !simple) return { kind: 'not-http' };
  const cleanLine = words.length === 3 && METHOD.test(words[0]) && words[1].startsWith('/') && /^[ -~]*$/.test(line) && !line.includes('\t');
  if (simple) return { kind: 'http', host: undefined, clear: false };

  const headEnd = findHeadEnd(data, eol + 1);
  if (headEnd === -1) return data.length - start < maxHead ? { kind: 'need-more' } : { kind: 'http', host: undefined, clear: false };
  let host: string | undefined;
  let hosts = 0;
  let clear = cleanLine;
  for (const raw of data.subarray(eol + 1, headEnd).toString('latin1').split('\n')) {
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text === '') continue;
    const m = HEADER_LINE.exec(text);
    // Folded lines, spaces before the colon, odd bytes: unusual enough to read in full.
    if (!m || !/^[\t -~]*$/.test(m[2])) {
      clear = false;
      continue;
    }
    if (m[1].toLowerCase() !== 'host') continue;
    hosts++;
    const h = HOST_VALUE.exec(m[2]);
    if (!h || (h[3] !== undefined && Number(h[3]) > 65535)) clear = false;
    else host = (h[1] ?? h[2]).toLowerCase();
  }
  if (hosts > 1) clear = false;
  return { kind: 'http', host: clear ? host : undefined, clear };
}

/** Index just past the blank line that ends the head, or -1. */
function findHeadEnd(data: Buffer, from: number): number {
  for (let i = data.indexOf(0x0a, from - 1); i !== -1 && i + 1 < data.length; i = data.indexOf(0x0a, i + 1)) {
    if (data[i + 1] === 0x0a) return i + 2;
    if (data[i + 1] === 0x0d && i + 2 < data.length && data[i + 2] === 0x0a) return i + 3;
  }
  return -1;
}
