// Values hidden by an encoding: fullwidth digits and letters (`４１１１…`), zero-width characters
// inside a number, percent-encoding (`jane%40example.com` in a link or a form) and a form's `+` for
// a space between digits (`4111+1111+1111+1111`), JSON `\u0040`
// escapes and XML character references (`&#64;`, `&#x40;`, `&amp;`) in documents carried in
// strings. The scanner reads a decoded view of such a text, in which every character remembers the
// stretch of the original it came from, so each detected span is mapped back onto the original
// characters and protected there, in its own encoding (valueEncoding below).
//
// Decoding is bounded: at most DECODE_ROUNDS rounds (`%2540` → `%40` → `@`: a value encoded twice),
// each one linear pass; only encodings of ASCII characters are decoded (the detectors read ASCII).

/** How one character of a decoded view was written in the original. */
const PLAIN = 0;
const FULLWIDTH = 1;
const PERCENT = 2;
const JSON_ESCAPE = 3;
const DECIMAL_REF = 4;
const HEX_REF = 5;
const NAMED_REF = 6;
/** `+` for a space between digits, as HTML forms write it (`card=4111+1111+1111+1111`). */
const FORM_PLUS = 7;

/**
 * The characters an encoding starts with; a hit is then checked by hand (hasEncoding). One character
 * class: the regular expression engine skips text without any of them at full speed.
 */
const ENCODING_START = /[\u00ad\u200b-\u200d\u2060\ufeff\u3000\uff01-\uff5e%\\&+]/g;

/** The text holds one of the encodings decoded here. No allocation. */
function hasEncoding(text: string): boolean {
  const start = ENCODING_START;
  start.lastIndex = 0;
  while (start.test(text)) {
    const i = start.lastIndex - 1;
    const c = text.charCodeAt(i);
    if (c === 37 /* % */) {
      const h = hexValue(text.charCodeAt(i + 1));
      const l = hexValue(text.charCodeAt(i + 2));
      if (h >= 0 && h < 8 && l >= 0 && URL_ENCODED[h * 16 + l] === 1) return true;
    } else if (c === 92 /* \ */) {
      if (text.charCodeAt(i + 1) === 117 && text.charCodeAt(i + 2) === 48 && text.charCodeAt(i + 3) === 48) return true;
    } else if (c === 38 /* & */) {
      const semi = text.indexOf(';', i + 2);
      if (semi > 0 && semi - i <= 6) return true;
    } else if (c === 43 /* + */) {
      if (isDigit(text.charCodeAt(i - 1)) && isDigit(text.charCodeAt(i + 1))) return true;
    } else return true;
  }
  return false;
}

export const DECODE_ROUNDS = 3;

export interface DecodedView {
  /** The decoded text the detectors read. */
  readonly text: string;
  /** For decoded character i: where its stretch starts in the original, and where it ends. */
  readonly from: Int32Array;
  readonly to: Int32Array;
}

/** Zero-width characters and the soft hyphen: invisible, dropped from the view. */
function isInvisible(c: number): boolean {
  return c === 0xad || (c >= 0x200b && c <= 0x200d) || c === 0x2060 || c === 0xfeff;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 0x20;
  return l >= 97 && l <= 102 ? l - 87 : -1;
}

/**
 * Characters percent-encoding is used for: space and the delimiters (`@`, `+`, `:`, `/`, `%`…).
 * Letters and digits are never percent-encoded by URL writers, and `%41…` in `LIKE '%4111…'` or
 * `50%ABC` is no encoding: such sequences stay as written.
 */
const URL_ENCODED: Uint8Array = (() => {
  const t = new Uint8Array(128);
  for (const ch of ' !"#$%&\'()*+,/:;<=>?@[\\]^`{|}') t[ch.charCodeAt(0)] = 1;
  return t;
})();

const NAMED: Record<string, number> = { amp: 38, lt: 60, gt: 62, quot: 34, apos: 39 };

/**
 * One decoding pass: [decoded text, per decoded char its original start and end, per char how it
 * was written]. Undefined when nothing was decoded.
 */
function decodeOnce(text: string): { text: string; from: Int32Array; to: Int32Array; how: Uint8Array } | undefined {
  const n = text.length;
  const from = new Int32Array(n);
  const to = new Int32Array(n);
  const how = new Uint8Array(n);
  let out = '';
  let k = 0;
  let changed = false;
  const put = (ch: number, start: number, end: number, h: number) => {
    out += String.fromCharCode(ch);
    from[k] = start;
    to[k] = end;
    how[k] = h;
    k++;
    if (h !== PLAIN) changed = true;
  };
  for (let i = 0; i < n; ) {
    const c = text.charCodeAt(i);
    if (isInvisible(c)) {
      changed = true;
      i++;
      continue;
    }
    if (c >= 0xff01 && c <= 0xff5e) {
      put(c - 0xfee0, i, i + 1, FULLWIDTH);
      i++;
      continue;
    }
    if (c === 0x3000) {
      put(32, i, i + 1, FULLWIDTH);
      i++;
      continue;
    }
    if (c === 37 /* % */ && i + 2 < n) {
      const h = hexValue(text.charCodeAt(i + 1));
      const l = hexValue(text.charCodeAt(i + 2));
      if (h >= 0 && l >= 0 && h < 8 && URL_ENCODED[h * 16 + l] === 1) {
        put(h * 16 + l, i, i + 3, PERCENT);
        i += 3;
        continue;
      }
    }
    if (c === 43 /* + */ && isDigit(text.charCodeAt(i - 1)) && isDigit(text.charCodeAt(i + 1))) {
      put(32, i, i + 1, FORM_PLUS);
      i++;
      continue;
    }
    if (c === 92 /* \ */ && text.charCodeAt(i + 1) === 117 /* u */ && text.charCodeAt(i + 2) === 48 && text.charCodeAt(i + 3) === 48) {
      const h = hexValue(text.charCodeAt(i + 4));
      const l = hexValue(text.charCodeAt(i + 5));
      if (h >= 0 && h < 8 && l >= 0) {
        put(h * 16 + l, i, i + 6, JSON_ESCAPE);
        i += 6;
        continue;
      }
    }
    if (c === 38 /* & */) {
      const semi = text.indexOf(';', i + 2);
      if (semi > 0 && semi - i <= 6) {
        const body = text.slice(i + 1, semi);
        let value = -1;
        let h = NAMED_REF;
        if (body.charCodeAt(0) === 35 /* # */) {
          const hex = (body.charCodeAt(1) | 0x20) === 120;
          const digits = body.slice(hex ? 2 : 1);
          if (digits.length > 0 && (hex ? /^[0-9A-Fa-f]+$/ : /^[0-9]+$/).test(digits)) value = parseInt(digits, hex ? 16 : 10);
          h = hex ? HEX_REF : DECIMAL_REF;
        } else if (Object.hasOwn(NAMED, body)) value = NAMED[body];
        if (value > 0 && value < 128) {
          put(value, i, semi + 1, h);
          i = semi + 1;
          continue;
        }
      }
    }
    put(c, i, i + 1, PLAIN);
    i++;
  }
  return changed ? { text: out, from: from.subarray(0, k), to: to.subarray(0, k), how: how.subarray(0, k) } : undefined;
}

/** The decoded view of `text`, or undefined when it holds no encoding (the common case: no allocation). */
export function decodedView(text: string): DecodedView | undefined {
  if (!hasEncoding(text)) return undefined;
  let view: DecodedView | undefined;
  let current = text;
  for (let round = 0; round < DECODE_ROUNDS; round++) {
    const once = decodeOnce(current);
    if (once === undefined) break;
    if (view === undefined) view = { text: once.text, from: once.from, to: once.to };
    else {
      // Compose: a character of this round maps to a stretch of the previous view, hence of the original.
      const from = new Int32Array(once.text.length);
      const to = new Int32Array(once.text.length);
      for (let i = 0; i < once.text.length; i++) {
        from[i] = view.from[once.from[i]];
        to[i] = view.to[once.to[i] - 1];
      }
      view = { text: once.text, from, to };
    }
    current = once.text;
    if (!hasEncoding(current)) break;
  }
  return view;
}

/**
 * A detected value as written (`４１１１…`, `jane%40example.com`) and how to write a technique's
 * result back in the same encoding. A result of the decoded value's length (Mask, format-preserving
 * Pseudonymise, Reconstruct) is encoded character by character as the original was, zero-width
 * characters put back where they were; any other result (a token, a hash, a pseudonym of another
 * length) gets the original's encoded punctuation written the same way (encodeLike).
 */
export interface ValueEncoding {
  readonly plain: string;
  encode(result: string): string;
  /**
   * Pseudonymise and Reconstruct, whose results must read back to the exact spelling: `result`
   * with each encoded character of the original (and each invisible one) written at the same
   * place, counted from the start, whatever the result's length (`４1.0.0.0` → `１26.110.152.69` →
   * `４1.0.0.0`). Undefined when the result cannot carry them so that its decoding gives back
   * `result` with the same places encoded (too short for them, a `%` form of a letter): the
   * caller walks on to the next pseudonym, and Reconstruct skips the same ones on the way back.
   */
  encodeAt(result: string): string | undefined;
}

export function valueEncoding(value: string, depth = DECODE_ROUNDS): ValueEncoding | undefined {
  if (depth === 0 || !hasEncoding(value)) return undefined;
  const once = decodeOnce(value);
  if (once === undefined) return undefined;
  // Encoded twice (`jane%2540example.com`): decode the rest first, encode back in reverse order.
  const inner = valueEncoding(once.text, depth - 1);
  const decoded = once.text;
  const outer: { -readonly [K in keyof ValueEncoding]: ValueEncoding[K] } = {
    plain: decoded,
    encodeAt: () => undefined,
    encode(result: string): string {
      if (result.length !== decoded.length) return encodeLike(result, decoded, value, once);
      let out = '';
      let at = 0;
      for (let i = 0; i < decoded.length; i++) {
        // Invisible characters dropped before this one go back in their place.
        if (once.from[i] > at) out += value.slice(at, once.from[i]);
        out += encodeChar(result.charCodeAt(i), once.how[i], value.slice(once.from[i], once.to[i]));
        at = once.to[i];
      }
      return out + value.slice(at);
    },
  };
  outer.encodeAt = (result: string): string | undefined => {
    let out = '';
    let at = 0;
    for (let i = 0; i < decoded.length; i++) {
      const encoded = once.how[i] !== PLAIN || once.from[i] > at;
      if (i >= result.length) {
        if (encoded) return undefined;
        at = once.to[i];
        continue;
      }
      if (once.from[i] > at) out += value.slice(at, once.from[i]);
      out += encodeChar(result.charCodeAt(i), once.how[i], value.slice(once.from[i], once.to[i]));
      at = once.to[i];
    }
    out += result.slice(decoded.length) + value.slice(decoded.length > 0 ? once.to[decoded.length - 1] : 0);
    return readsAs(out, result, once.how, decoded.length) ? out : undefined;
  };
  if (inner === undefined) return outer;
  return {
    plain: inner.plain,
    encode: (result) => outer.encode(inner.encode(result)),
    encodeAt: (result) => {
      const once = inner.encodeAt(result);
      return once === undefined ? undefined : outer.encodeAt(once);
    },
  };
}

/** `written` decodes (one round) to `result`, encoded at exactly the places `how` says (plain past its end). */
function readsAs(written: string, result: string, how: Uint8Array, length: number): boolean {
  const back = decodeOnce(written);
  if (back === undefined) return how.every((h, i) => h === PLAIN || i >= result.length) && written === result;
  if (back.text !== result) return false;
  for (let i = 0; i < result.length; i++) if (back.how[i] !== (i < length ? how[i] : PLAIN)) return false;
  return true;
}

/**
 * A result of another length (a token, a hash, a pseudonym of another length): each punctuation
 * character the original wrote encoded (`@` as `%40` or `\u0040`) is written the same way wherever
 * it occurs; letters, digits and `:` stay plain, so an `enc:v1:` token stays findable by its prefix.
 */
function encodeLike(result: string, decoded: string, value: string, once: { from: Int32Array; to: Int32Array; how: Uint8Array }): string {
  const forms = new Map<number, string>();
  for (let i = 0; i < decoded.length; i++) {
    const c = decoded.charCodeAt(i);
    if (once.how[i] === PLAIN || forms.has(c) || c === 58 || (c < 128 && /[A-Za-z0-9]/.test(decoded[i]))) continue;
    forms.set(c, value.slice(once.from[i], once.to[i]));
  }
  if (forms.size === 0) return result;
  let out = '';
  for (let i = 0; i < result.length; i++) out += forms.get(result.charCodeAt(i)) ?? result[i];
  return out;
}

function encodeChar(c: number, how: number, original: string): string {
  const ch = String.fromCharCode(c);
  switch (how) {
    case FULLWIDTH:
      return c === 32 ? '\u3000' : c > 32 && c < 127 ? String.fromCharCode(c + 0xfee0) : ch;
    case PERCENT: {
      const hex = c.toString(16).padStart(2, '0');
      return `%${original === original.toLowerCase() ? hex : hex.toUpperCase()}`;
    }
    case JSON_ESCAPE: {
      const hex = c.toString(16).padStart(4, '0');
      return `\\u${original.slice(2) === original.slice(2).toLowerCase() ? hex : hex.toUpperCase()}`;
    }
    case FORM_PLUS:
      return c === 32 ? '+' : ch;
    case DECIMAL_REF:
      return `&#${c};`;
    case HEX_REF:
      return `&#${original.charAt(2)}${c.toString(16)};`;
    case NAMED_REF: {
      const name = Object.keys(NAMED).find((k) => NAMED[k] === c);
      return name !== undefined ? `&${name};` : ch;
    }
    default:
      return ch;
  }
}
