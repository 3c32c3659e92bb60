// Reading SQL literals into values and writing values back as SQL literals, in the dialect's syntax.

import type { Scalar } from '../../core/types.ts';
import type { SqlDialect } from './dialects.ts';
import { decodeBigQuery, decodeMysql, decodePostgresEscape, decodePostgresUnicode, decodeSnowflake, hexBytes } from './escapes.ts';
import { NUMBER, STRING, type SqlToken, type SqlTokens } from './tokenizer.ts';
import { keptWriting } from '../kept-writing.ts';

/**
 * The value a string token stands for: quotes removed, every escape form of the dialect resolved as
 * its server reads it (escapes.ts). Throws EscapeError for an escape that cannot be read with certainty.
 * Binary and bit strings (X'…', B'…') come back as their digits: binaryBytes reads their bytes.
 */
export function decodeString(sql: string, token: SqlToken, dialect: SqlDialect): string {
  return readsAsWritten(sql, token) ? sql.slice(token.contentStart, token.contentEnd) : decodeWriting(sql, token, dialect);
}

/** decodeString without its shortcut for literals that read as written (the tests hold the two to the same values). */
export function decodeWriting(sql: string, token: SqlToken, dialect: SqlDialect): string {
  const content = sql.slice(token.contentStart, token.contentEnd);
  const prefix = token.prefix;
  if (prefix === '$' || prefix.includes('R') || prefix === 'X') return content;
  if (prefix === 'U&') return decodePostgresUnicode(content);
  if (prefix === 'E') return decodePostgresEscape(content);
  if (prefix === 'B' && dialect.name !== 'bigquery') return content;
  if (!dialect.backslashEscapes) return content.replaceAll(token.quote + token.quote, token.quote);
  if (dialect.name === 'bigquery') return decodeBigQuery(content);
  if (dialect.name === 'snowflake') return decodeSnowflake(content);
  return decodeMysql(content, token.quote);
}

/**
 * A quoted string without a prefix (or with N) whose content holds neither a backslash nor its
 * quote: every dialect reads it as written, so it decodes to its content. Most literals are such.
 */
export function readsAsWritten(sql: string, token: SqlToken): boolean {
  if (token.kind !== 'string' || (token.prefix !== '' && token.prefix !== 'N')) return false;
  return writtenPlainly(sql, token.contentStart, token.contentEnd, token.quote.charCodeAt(0));
}

/**
 * decodeString of token k (a string), read on the script's token arrays: the token object is made
 * only for a literal with a prefix other than N, or with a backslash or its quote inside.
 */
export function decodeStringAt(tokens: SqlTokens, k: number, dialect: SqlDialect): string {
  const from = tokens.contentStarts[k];
  const to = tokens.contentEnds[k];
  if ((tokens.textIds[k] === 0 || tokens.prefix(k) === 'N') && writtenPlainly(tokens.sql, from, to, tokens.quotes[k])) return tokens.sql.slice(from, to);
  return decodeString(tokens.sql, tokens.token(k)!, dialect);
}

/** sql[from, to) holds neither a backslash nor the quote (its character code): the test of readsAsWritten. */
export function writtenPlainly(sql: string, from: number, to: number, quote: number): boolean {
  for (let i = from; i < to; i++) {
    const c = sql.charCodeAt(i);
    if (c === 92 || c === quote) return false;
  }
  return true;
}

/**
 * The bytes of a binary literal, which servers store as bytes and convert to text in a character set
 * the gateway cannot see: X'…' (and BigQuery's b'…'), MySQL's b'0101' and 0b0101, and 0x… where it is
 * a binary string (MySQL, MariaDB, T-SQL). Undefined for any other token.
 */
export function binaryBytes(sql: string, token: SqlToken, dialect: SqlDialect): Uint8Array | undefined {
  const mysql = dialect.name === 'mysql' || dialect.name === 'mariadb';
  if (token.kind === 'number') {
    if (sql.charCodeAt(token.start) !== 48) return undefined; // neither 0x… nor 0b…
    const text = sql.slice(token.start, token.end);
    if (/^0x/i.test(text) && (mysql || dialect.name === 'transactsql')) return hexBytes(text.slice(2)) ?? hexBytes('0' + text.slice(2));
    if (text.startsWith('0b') && mysql) return bitBytes(text.slice(2));
    return undefined;
  }
  // Most strings have no prefix: nothing to slice.
  if (token.kind !== 'string' || token.prefix === '' || token.prefix === 'N') return undefined;
  const content = sql.slice(token.contentStart, token.contentEnd);
  if (token.prefix === 'X') return hexBytes(content) ?? hexBytes('0' + content) ?? new Uint8Array();
  if (dialect.name === 'bigquery' && token.prefix.includes('B')) {
    return new TextEncoder().encode(token.prefix.includes('R') ? content : decodeBigQuery(content));
  }
  if (token.prefix === 'B') return bitBytes(content);
  return undefined;
}

/**
 * binaryBytes of token k, read on the script's token arrays: the token object is made only for a
 * string with a prefix other than N, or a number written with a leading 0.
 */
export function binaryBytesAt(tokens: SqlTokens, k: number, dialect: SqlDialect): Uint8Array | undefined {
  const kind = tokens.kinds[k];
  if (kind === NUMBER ? tokens.sql.charCodeAt(tokens.starts[k]) !== 48 : kind !== STRING || tokens.textIds[k] === 0 || tokens.prefix(k) === 'N') return undefined;
  return binaryBytes(tokens.sql, tokens.token(k)!, dialect);
}

/** Bits, right-aligned into whole bytes as MySQL pads them. */
function bitBytes(bits: string): Uint8Array {
  if (!/^[01]*$/.test(bits)) return new Uint8Array();
  const padded = bits.padStart(Math.ceil(bits.length / 8) * 8, '0');
  const out = new Uint8Array(padded.length / 8);
  for (let k = 0; k < out.length; k++) out[k] = Number.parseInt(padded.slice(8 * k, 8 * k + 8), 2);
  return out;
}

/**
 * The texts a server may read binary bytes as when it stores them in a text column: UTF-8 (or
 * Latin-1 where they are not UTF-8), and UTF-16LE in T-SQL (binary into NVARCHAR).
 */
export function binaryTexts(bytes: Uint8Array, dialect: SqlDialect): string[] {
  const texts: string[] = [];
  try {
    texts.push(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    texts.push(new TextDecoder('latin1').decode(bytes));
  }
  if (dialect.name === 'transactsql' && bytes.length % 2 === 0) texts.push(new TextDecoder('utf-16le').decode(bytes));
  return texts;
}

/**
 * A numeric literal as a JS number when that is exact, else its text (huge or very precise values).
 * `0x…` is an integer in PostgreSQL (16+), SQLite, BigQuery and Snowflake, read as its decimal value;
 * in MySQL, MariaDB and T-SQL it is a binary string (binaryBytes) and stays as written.
 */
export function decodeNumber(text: string, negative: boolean, dialect: SqlDialect): Scalar {
  const signed = negative ? '-' + text : text;
  if (/^0x/i.test(text)) {
    if (dialect.name === 'mysql' || dialect.name === 'mariadb' || dialect.name === 'transactsql' || !/^0x[0-9a-f]+$/i.test(text)) return signed;
    let value = BigInt(text);
    // SQLite reads a hex literal as a 64-bit two's-complement integer.
    if (dialect.name === 'sqlite' && value >= 1n << 63n) value = value < 1n << 64n ? value - (1n << 64n) : value;
    if (negative) value = -value;
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
  }
  const n = Number(signed);
  if (!Number.isFinite(n)) return signed;
  const integerText = /^-?\d+$/.test(signed);
  if (integerText) return Number.isSafeInteger(n) ? n : signed;
  return n;
}

const NUMERIC_TEXT = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

export interface LiteralStyle {
  /** The protected literal was written as a number: numeric-looking results stay unquoted. */
  readonly numeric: boolean;
  /** String prefix kept on output (N for national strings, E and U& for PostgreSQL escape strings). */
  readonly prefix: string;
  /** The quote the original used (' or "), so a reversed value comes back byte for byte. */
  readonly quote: string;
  /** How the original escaped its quote; undefined when it had none to escape (dialect default). */
  readonly escape: 'double' | 'backslash' | undefined;
}

/** The writing style of an original string token: its quote and how it escaped that quote. */
export function styleOf(sql: string, token: SqlToken, numeric: boolean): LiteralStyle {
  const prefix = token.prefix === 'N' || token.prefix === 'E' || token.prefix === 'U&' ? token.prefix : '';
  if (token.kind !== 'string' || token.prefix === '$' || token.prefix.includes('R') || token.prefix === 'X' || token.prefix === 'B') {
    return { numeric, prefix, quote: "'", escape: undefined };
  }
  const content = sql.slice(token.contentStart, token.contentEnd);
  const q = token.quote;
  const escape = content.includes('\\' + q) ? 'backslash' : content.includes(q + q) ? 'double' : undefined;
  return { numeric, prefix, quote: q, escape };
}

/** Writes a value as a SQL literal in the dialect, keeping the original's kind and quoting where it can. */
export function encodeLiteral(value: Scalar, style: LiteralStyle, dialect: SqlDialect): string {
  if (value === null) return 'NULL';
  if (typeof value === 'boolean') return value ? dialect.booleans[1] : dialect.booleans[0];
  if (typeof value === 'number') {
    // A number replacing a string literal stays a string: the column's type does not change.
    if (style.numeric && Number.isFinite(value)) return String(value);
    return quoteString(String(value), style, dialect);
  }
  if (style.numeric && NUMERIC_TEXT.test(value)) return value;
  return quoteString(value, style, dialect);
}

/** Literals longer than this are written whole by encodeLiteral rather than followed character by character. */
const MAX_FOLLOWED = 65_536;

/**
 * A string literal's new value written over the original token: characters the rule left as they
 * were keep their writing (Snowflake's `\<` stays `\<`, a `''` stays `''`); only the changed
 * stretch is escaped the dialect's way (of the same length, only its changed characters).
 * Undefined where the literal's writing cannot be followed (dollar-quoted, raw or binary strings,
 * very long ones) or the result would not read back as `after`: the caller writes it whole.
 */
export function rewriteString(sql: string, token: SqlToken, before: string, after: string, dialect: SqlDialect): string | undefined {
  if (token.kind !== 'string' || token.prefix === '$' || token.prefix.includes('R') || token.prefix === 'X' || token.prefix === 'B') return undefined;
  const content = sql.slice(token.contentStart, token.contentEnd);
  if (content.length > MAX_FOLLOWED) return undefined;
  // Neither text holds a character any dialect escapes: each character is written as itself on both
  // sides, so the kept writing of the changed stretch is the new value itself (followWriting gives
  // the same bytes, one escape call per changed character).
  if (token.prefix === '' || token.prefix === 'N') {
    const over = writtenOver(sql, token.start, token.contentStart, token.contentEnd, token.end, token.quote, before, after);
    if (over !== undefined) return over;
  }
  return followWriting(sql, token, before, after, dialect);
}

/**
 * rewriteString of token k (a string), read on the script's token arrays: the token object is made
 * only where the shortcut for literals written as themselves does not apply.
 */
export function rewriteStringAt(tokens: SqlTokens, k: number, before: string, after: string, dialect: SqlDialect): string | undefined {
  const from = tokens.contentStarts[k];
  const to = tokens.contentEnds[k];
  if (tokens.kinds[k] === STRING && (tokens.textIds[k] === 0 || tokens.prefix(k) === 'N') && to - from <= MAX_FOLLOWED) {
    const over = writtenOver(tokens.sql, tokens.starts[k], from, to, tokens.ends[k], tokens.quote(k), before, after);
    if (over !== undefined) return over;
  }
  return rewriteString(tokens.sql, tokens.token(k)!, before, after, dialect);
}

/**
 * The shortcut of rewriteString: where the literal's content is `before` and neither text holds a
 * character any dialect escapes, `after` written between the original's quotes; else undefined.
 */
function writtenOver(sql: string, start: number, contentStart: number, contentEnd: number, end: number, quote: string, before: string, after: string): string | undefined {
  if (before.length !== contentEnd - contentStart || !sql.startsWith(before, contentStart)) return undefined;
  if (!writtenAsItself(before, quote) || !writtenAsItself(after, quote)) return undefined;
  return sql.slice(start, contentStart) + after + sql.slice(contentEnd, end);
}

/** rewriteString without its shortcut for literals written as themselves (the tests hold the two to the same bytes). */
export function followWriting(sql: string, token: SqlToken, before: string, after: string, dialect: SqlDialect): string | undefined {
  if (token.kind !== 'string' || token.prefix === '$' || token.prefix.includes('R') || token.prefix === 'X' || token.prefix === 'B') return undefined;
  const content = sql.slice(token.contentStart, token.contentEnd);
  if (content.length > MAX_FOLLOWED) return undefined;
  const style = styleOf(sql, token, false);
  const decode = (text: string): string => decodeWriting(text, { ...token, contentStart: 0, contentEnd: text.length }, dialect);
  const at = writtenAt(content, token.quote, before, decode);
  if (at === undefined) return undefined;
  const body = (text: string): string => quoteString(text, style, dialect).slice(style.prefix.length + 1, -1);
  const [from, to, middle] = keptWriting(content, at, before, after, body);
  const written = content.slice(0, from) + middle + content.slice(to);
  // A lone half of a pair, or an escape joined with its new neighbour, would read otherwise: checked.
  let reads: string | undefined;
  try {
    reads = decode(written);
  } catch {
    reads = undefined;
  }
  return reads === after ? sql.slice(token.start, token.contentStart) + written + sql.slice(token.contentEnd, token.end) : undefined;
}

/** No character a string literal's writing can escape or end at: backslash, the quote, NUL, CR, LF. */
function writtenAsItself(text: string, quote: string): boolean {
  const q = quote.charCodeAt(0);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 92 || c === q || c === 0 || c === 10 || c === 13) return false;
  }
  return true;
}

/**
 * Where each character of `value` (the reading of `content`) is written in content, plus content's
 * length at the end; undefined when the writing cannot be split so. A writing is one character, or
 * an escape (a backslash, or a doubled quote) and the fewest characters after it that read as the
 * next characters of the value: `\x41` is one, `\<` another.
 */
function writtenAt(content: string, quote: string, value: string, decode: (text: string) => string): number[] | undefined {
  const at: number[] = [];
  let d = 0;
  for (let i = 0; i < content.length; ) {
    const c = content.charCodeAt(i);
    let width = 1;
    if (c === 92 /* \ */ || content[i] === quote) {
      width = 0;
      for (let w = 2; w <= 10 && i + w <= content.length; w++) {
        let piece: string;
        try {
          piece = decode(content.slice(i, i + w));
        } catch {
          continue;
        }
        if (piece.length > 0 && value.startsWith(piece, d)) {
          width = w;
          break;
        }
      }
      if (width === 0) {
        if (c !== 92 && value.charCodeAt(d) === c) width = 1;
        else return undefined;
      }
    }
    const piece = width === 1 ? content[i] : decode(content.slice(i, i + width));
    for (let k = 0; k < piece.length; k++) at.push(i);
    d += piece.length;
    i += width;
  }
  if (d !== value.length) return undefined;
  at.push(content.length);
  return at;
}

/**
 * Writes text in the original's literal form: an E'…' or U&'…' literal stays one, with its escape
 * character escaped; where the dialect reads backslashes, they are doubled.
 */
function quoteString(text: string, style: LiteralStyle, dialect: SqlDialect): string {
  const q = style.quote;
  const backslash = dialect.backslashEscapes || style.prefix === 'E';
  let body = text;
  if (style.prefix === 'U&') {
    body = body.replaceAll('\\', '\\\\').replaceAll(q, q + q);
  } else if (backslash) {
    body = body.replaceAll('\\', '\\\\');
    const escape = style.escape ?? (dialect.quoteEscape === "\\'" ? 'backslash' : 'double');
    body = body.replaceAll(q, escape === 'backslash' ? '\\' + q : q + q);
    if (dialect.name === 'bigquery') body = body.replaceAll('\n', '\\n').replaceAll('\r', '\\r');
    if (dialect.name === 'mysql' || dialect.name === 'mariadb') body = body.replaceAll('\0', '\\0');
  } else {
    body = body.replaceAll(q, q + q);
  }
  return `${style.prefix}${q}${body}${q}`;
}
