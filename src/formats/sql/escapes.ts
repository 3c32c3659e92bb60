// Every escape form each dialect's server decodes inside a string literal, decoded exactly as that
// server does, so that detection and protection see the value the server stores. An escape whose
// reading is not certain (servers or versions differ, or the server itself refuses it) is an
// EscapeError: the codec refuses the request rather than guess.

/** An escape that cannot be decoded with certainty; `offset` is relative to the literal's content. */
export class EscapeError extends Error {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

const HEX = /^[0-9A-Fa-f]$/;
const OCTAL = /^[0-7]$/;

/** `count` hex digits at `at`, or -1 when fewer are there. */
function hexRun(content: string, at: number, count: number): number {
  for (let k = 0; k < count; k++) if (!HEX.test(content[at + k] ?? '')) return -1;
  return Number.parseInt(content.slice(at, at + count), 16);
}

/** Appends a code point, refusing what no server stores as text: NUL, surrogates, values past U+10FFFF. */
function codePoint(value: number, at: number): string {
  if (value === 0) throw new EscapeError(at, 'an escape for the NUL character is read differently by different servers');
  if (value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) throw new EscapeError(at, 'an escape names no Unicode character');
  return String.fromCodePoint(value);
}

/**
 * MySQL and MariaDB: `\0 \' \" \b \n \r \t \Z \\`; `\%` and `\_` keep their backslash (they only mean
 * something to LIKE); a backslash before any other character is dropped. There are no numeric escapes
 * (`\x41` is `x41`). A doubled quote is one quote.
 */
export function decodeMysql(content: string, quote: string): string {
  let out = '';
  for (let i = 0; i < content.length; i++) {
    const ch = content[i];
    if (ch === '\\' && i + 1 < content.length) {
      const next = content[++i];
      out += MYSQL_ESCAPES[next] ?? (next === '%' || next === '_' ? '\\' + next : next);
    } else if (ch === quote && content[i + 1] === quote) {
      out += quote;
      i++;
    } else out += ch;
  }
  return out;
}
const MYSQL_ESCAPES: Record<string, string> = { '0': '\0', b: '\b', n: '\n', r: '\r', t: '\t', Z: '\x1a', '\\': '\\', "'": "'", '"': '"' };

/**
 * PostgreSQL `E'…'`: `\b \f \n \r \t`, octal `\o`…`\ooo` and hex `\xh`/`\xhh` byte values, `\uXXXX`
 * and `\UXXXXXXXX` code points (a UTF-16 surrogate pair written as two `\u` escapes is one
 * character), any other escaped character stands for itself. Byte escapes build UTF-8: the whole
 * value must be valid UTF-8 without NUL, as a UTF8 server requires.
 */
export function decodePostgresEscape(content: string): string {
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  const text = (s: string): void => {
    for (const b of encoder.encode(s)) bytes.push(b);
  };
  for (let i = 0; i < content.length; i++) {
    const ch = content[i];
    if (ch === "'" && content[i + 1] === "'") {
      bytes.push(0x27);
      i++;
      continue;
    }
    if (ch !== '\\' || i + 1 >= content.length) {
      // A character outside the BMP is two code units: encode the pair, not its halves.
      const cp = content.codePointAt(i)!;
      if (cp > 0xffff) i++;
      text(String.fromCodePoint(cp));
      continue;
    }
    const at = i;
    const next = content[++i];
    if (OCTAL.test(next)) {
      let end = i + 1;
      while (end < i + 3 && OCTAL.test(content[end] ?? '')) end++;
      const value = Number.parseInt(content.slice(i, end), 8);
      if (value === 0 || value > 0o377) throw new EscapeError(at, 'an octal escape outside 1–377 is read differently by different servers');
      bytes.push(value);
      i = end - 1;
    } else if (next === 'x' && HEX.test(content[i + 1] ?? '')) {
      const end = HEX.test(content[i + 2] ?? '') ? i + 3 : i + 2;
      const value = Number.parseInt(content.slice(i + 1, end), 16);
      if (value === 0) throw new EscapeError(at, 'an escape for the NUL character is read differently by different servers');
      bytes.push(value);
      i = end - 1;
    } else if (next === 'u' || next === 'U') {
      const width = next === 'u' ? 4 : 8;
      let value = hexRun(content, i + 1, width);
      if (value < 0) throw new EscapeError(at, 'a Unicode escape needs 4 (\\u) or 8 (\\U) hex digits');
      i += width;
      if (value >= 0xd800 && value <= 0xdbff && content[i + 1] === '\\' && content[i + 2] === 'u') {
        const low = hexRun(content, i + 3, 4);
        if (low >= 0xdc00 && low <= 0xdfff) {
          value = 0x10000 + ((value - 0xd800) << 10) + (low - 0xdc00);
          i += 6;
        }
      }
      text(codePoint(value, at));
    } else {
      text(POSTGRES_ESCAPES[next] ?? next);
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    throw new EscapeError(0, 'byte escapes that do not form UTF-8 text');
  }
}
const POSTGRES_ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/**
 * PostgreSQL `U&'…'` with the default escape character: `\XXXX`, `\+XXXXXX`, `\\`; anything else
 * after a backslash is an error on the server too. A doubled quote is one quote.
 */
export function decodePostgresUnicode(content: string): string {
  let out = '';
  for (let i = 0; i < content.length; i++) {
    const ch = content[i];
    if (ch === "'" && content[i + 1] === "'") {
      out += "'";
      i++;
      continue;
    }
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    if (content[i + 1] === '\\') {
      out += '\\';
      i++;
      continue;
    }
    const plus = content[i + 1] === '+';
    const width = plus ? 6 : 4;
    const from = i + (plus ? 2 : 1);
    let value = hexRun(content, from, width);
    if (value < 0) throw new EscapeError(i, 'a Unicode escape needs \\XXXX or \\+XXXXXX');
    const at = i;
    i = from + width - 1;
    if (value >= 0xd800 && value <= 0xdbff && content[i + 1] === '\\' && content[i + 2] !== '+') {
      const low = hexRun(content, i + 2, 4);
      if (low >= 0xdc00 && low <= 0xdfff) {
        value = 0x10000 + ((value - 0xd800) << 10) + (low - 0xdc00);
        i += 5;
      }
    }
    out += codePoint(value, at);
  }
  return out;
}

/**
 * BigQuery (GoogleSQL) quoted strings: `\a \b \f \n \r \t \v \\ \? \" \' \``, octal `\ooo` (exactly
 * three digits), hex `\xhh`/`\Xhh` (exactly two), `\uhhhh`, `\Uhhhhhhhh`; numeric escapes are code
 * points. Any other escape is an error on the server too.
 */
export function decodeBigQuery(content: string): string {
  let out = '';
  for (let i = 0; i < content.length; i++) {
    const ch = content[i];
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const at = i;
    const next = content[++i] ?? '';
    if (Object.hasOwn(BIGQUERY_ESCAPES, next)) {
      out += BIGQUERY_ESCAPES[next];
    } else if (OCTAL.test(next)) {
      if (!OCTAL.test(content[i + 1] ?? '') || !OCTAL.test(content[i + 2] ?? '')) throw new EscapeError(at, 'an octal escape needs exactly three digits');
      out += codePoint(Number.parseInt(content.slice(i, i + 3), 8), at);
      i += 2;
    } else if (next === 'x' || next === 'X' || next === 'u' || next === 'U') {
      const width = next === 'u' ? 4 : next === 'U' ? 8 : 2;
      const value = hexRun(content, i + 1, width);
      if (value < 0) throw new EscapeError(at, `a \\${next} escape needs exactly ${width} hex digits`);
      out += codePoint(value, at);
      i += width;
    } else {
      throw new EscapeError(at, 'an escape BigQuery does not define');
    }
  }
  return out;
}
const BIGQUERY_ESCAPES: Record<string, string> = {
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  '?': '?',
  '"': '"',
  "'": "'",
  '`': '`',
};

/**
 * Snowflake single-quoted strings: `\' \" \\ \b \f \n \r \t`, octal `\ooo` (three digits), hex
 * `\xhh` (two), `\uhhhh` (four), code points all; a backslash before any other letter or sign
 * is dropped. Forms whose reading is not documented (`\0` followed by a digit, short or capital
 * numeric escapes, `\U`) are refused. A doubled quote is one quote.
 */
export function decodeSnowflake(content: string): string {
  let out = '';
  for (let i = 0; i < content.length; i++) {
    const ch = content[i];
    if (ch === "'" && content[i + 1] === "'") {
      out += "'";
      i++;
      continue;
    }
    if (ch !== '\\' || i + 1 >= content.length) {
      out += ch;
      continue;
    }
    const at = i;
    const next = content[++i];
    if (/^[0-9]$/.test(next)) {
      // `\012`: NUL then "12", or octal 012? Not documented: refused.
      if (next === '0' && /^[0-9]$/.test(content[i + 1] ?? '')) throw new EscapeError(at, 'a \\0 followed by a digit is read either as NUL or as an octal escape');
      if (!OCTAL.test(next) || !OCTAL.test(content[i + 1] ?? '') || !OCTAL.test(content[i + 2] ?? '')) {
        throw new EscapeError(at, 'a backslash before a digit is read as octal only with exactly three octal digits');
      }
      out += codePoint(Number.parseInt(content.slice(i, i + 3), 8), at);
      i += 2;
    } else if (next === 'x' || next === 'u') {
      const width = next === 'u' ? 4 : 2;
      const value = hexRun(content, i + 1, width);
      if (value < 0) throw new EscapeError(at, `a \\${next} escape needs exactly ${width} hex digits`);
      out += codePoint(value, at);
      i += width;
    } else if (next === 'X' || next === 'U') {
      throw new EscapeError(at, `the \\${next} escape is not documented by Snowflake`);
    } else {
      out += SNOWFLAKE_ESCAPES[next] ?? next;
    }
  }
  return out;
}
const SNOWFLAKE_ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** The bytes of a hex literal's digits (`X'4A61'`, `0x4A61`); undefined for an odd count or a non-hex digit. */
export function hexBytes(digits: string): Uint8Array | undefined {
  if (digits.length % 2 !== 0 || !/^[0-9A-Fa-f]*$/.test(digits)) return undefined;
  const out = new Uint8Array(digits.length / 2);
  for (let k = 0; k < out.length; k++) out[k] = Number.parseInt(digits.slice(2 * k, 2 * k + 2), 16);
  return out;
}
