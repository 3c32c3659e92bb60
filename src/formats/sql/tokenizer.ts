// A dialect-aware SQL lexer: finds every literal, identifier and operator with its exact source span,
// so protected literals can be spliced back into the original text without touching anything else.
// Comments follow each dialect's own rules (MySQL's `-- ` needs a space, PostgreSQL's nest, MySQL
// runs `/*! … */`), because a comment the server reads as code is code the gateway must protect;
// where servers could read a construct two ways, the request is refused instead.

import { DpgError } from '../../core/errors.ts';
import type { SqlDialect } from './dialects.ts';

export type SqlTokenKind =
  | 'string' // quoted string literal, any prefix (N'', E'', X'', r'', $$…$$)
  | 'number'
  | 'word' // unquoted identifier or keyword
  | 'ident' // quoted identifier: `…`, […], "…" (where "…" is not a string)
  | 'param' // ?, $1, :name, @var, @@var
  | 'op'
  | 'open'
  | 'close'
  | 'comma'
  | 'semi'
  | 'dot';

export interface SqlToken {
  readonly kind: SqlTokenKind;
  /** Offsets into the source: [start, end). */
  readonly start: number;
  readonly end: number;
  /** word: upper-cased; ident: decoded name; op: the operator; others: source text is in the span. */
  readonly text: string;
  /** string: upper-cased prefix ('' , 'N', 'E', 'U&', 'X', 'B', 'R', …) or '$' for dollar-quoted. */
  readonly prefix: string;
  /** string: the content between the quotes, still escaped as written. */
  readonly contentStart: number;
  readonly contentEnd: number;
  /** string: the quote character (' or "), or '$' for dollar-quoted; ident: its opening quote (`"`, `` ` ``, `[`). */
  readonly quote: string;
  /**
   * The condition of the MySQL executable comment the token stands in (`!50001`, `M!`), which the
   * server runs or skips by its version; '' for ordinary text and for `/*! … *\/`, which always runs.
   */
  readonly condition: string;
}

/** The tokens, and the source ranges a parser must not read (comments, executable-comment markers). */
export interface SqlLexed {
  readonly tokens: SqlTokens;
  /** [start, end) pairs, in order. */
  readonly hidden: number[];
}

// Token kinds as SqlTokens stores them (one byte each); KIND_NAMES gives the SqlTokenKind back.
export const STRING = 1;
export const NUMBER = 2;
export const WORD = 3;
export const IDENT = 4;
export const PARAM = 5;
export const OP = 6;
export const OPEN = 7;
export const CLOSE = 8;
export const COMMA = 9;
export const SEMI = 10;
export const DOT = 11;
const KIND_NAMES: readonly (SqlTokenKind | undefined)[] = [undefined, 'string', 'number', 'word', 'ident', 'param', 'op', 'open', 'close', 'comma', 'semi', 'dot'];
const QUOTE_TEXTS = new Map<number, string>([[0, ''], [39, "'"], [34, '"'], [96, '`'], [91, '['], [36, '$']]);

/**
 * A script's tokens as parallel typed arrays, index k for the k-th token: the tokenizer makes no
 * object per token (tens of thousands per script, all alive until it is protected, were most of
 * the scavenger's work). Texts — upper-cased words, decoded quoted names, operators, parameters,
 * string prefixes, executable-comment conditions — are kept once each in `texts` and referred to
 * by index. `token(k)` makes the SqlToken object for the readers that want one (the full-parser
 * path, the literals a rule protects), once per token.
 */
export class SqlTokens {
  length = 0;
  kinds: Uint8Array;
  starts: Int32Array;
  ends: Int32Array;
  /** string: [contentStart, contentEnd), the content between the quotes; 0 for other kinds. */
  contentStarts: Int32Array;
  contentEnds: Int32Array;
  /** Index into `texts`: the token's text (word, ident, op, param, punctuation); a string's prefix. */
  textIds: Int32Array;
  /** string and ident: the opening quote's character code; 0 for other kinds. */
  quotes: Uint16Array;
  /** Index into `texts` of the executable comment's condition; 0 (the empty text) outside one. */
  conditionIds: Int32Array;
  /** Every distinct text, '' first. */
  readonly texts: string[] = [''];
  private readonly ids = new Map<string, number>([['', 0]]);
  /** Token objects made so far, by index (a map: the few a rule protects are far apart). */
  private made: Map<number, SqlToken> | undefined;
  private every: SqlToken[] | undefined;
  /** By text index, the spelling `written` last gave. */
  private readonly spellings: (string | undefined)[] = [];

  constructor(
    /** The script the offsets point into. */
    readonly sql: string,
    capacity: number,
  ) {
    const n = Math.max(16, capacity);
    this.kinds = new Uint8Array(n);
    this.starts = new Int32Array(n);
    this.ends = new Int32Array(n);
    this.contentStarts = new Int32Array(n);
    this.contentEnds = new Int32Array(n);
    this.textIds = new Int32Array(n);
    this.quotes = new Uint16Array(n);
    this.conditionIds = new Int32Array(n);
  }

  /** The index of `text` in `texts`, added on first sight. */
  intern(text: string): number {
    const known = this.ids.get(text);
    if (known !== undefined) return known;
    const id = this.texts.length;
    this.texts.push(text);
    this.ids.set(text, id);
    return id;
  }

  add(kind: number, start: number, end: number, textId: number, quote: number, conditionId: number, contentStart = 0, contentEnd = 0): void {
    const k = this.length;
    if (k === this.kinds.length) this.grow();
    this.kinds[k] = kind;
    this.starts[k] = start;
    this.ends[k] = end;
    this.textIds[k] = textId;
    this.quotes[k] = quote;
    this.conditionIds[k] = conditionId;
    this.contentStarts[k] = contentStart;
    this.contentEnds[k] = contentEnd;
    this.length = k + 1;
  }

  private grow(): void {
    const n = this.kinds.length * 2;
    const grown = <T extends Uint8Array | Uint16Array | Int32Array>(from: T, make: (size: number) => T): T => {
      const to = make(n);
      to.set(from);
      return to;
    };
    this.kinds = grown(this.kinds, (size) => new Uint8Array(size));
    this.starts = grown(this.starts, (size) => new Int32Array(size));
    this.ends = grown(this.ends, (size) => new Int32Array(size));
    this.contentStarts = grown(this.contentStarts, (size) => new Int32Array(size));
    this.contentEnds = grown(this.contentEnds, (size) => new Int32Array(size));
    this.textIds = grown(this.textIds, (size) => new Int32Array(size));
    this.quotes = grown(this.quotes, (size) => new Uint16Array(size));
    this.conditionIds = grown(this.conditionIds, (size) => new Int32Array(size));
  }

  /** The kind of token k; undefined outside the script (k < 0 or past the last token). */
  kind(k: number): SqlTokenKind | undefined {
    return k >= 0 && k < this.length ? KIND_NAMES[this.kinds[k]] : undefined;
  }

  /** Token k is a word with this (upper-cased) text. */
  isWord(k: number, text: string): boolean {
    return k >= 0 && k < this.length && this.kinds[k] === WORD && this.texts[this.textIds[k]] === text;
  }

  /** SqlToken.text of token k ('' for strings). */
  text(k: number): string {
    const kind = this.kinds[k];
    if (kind === NUMBER) return this.sql.slice(this.starts[k], this.ends[k]);
    return kind === STRING ? '' : this.texts[this.textIds[k]];
  }

  /**
   * Token k's source text, sql[start, end): the same string for every occurrence of a spelling seen
   * last under its text (a name written the same way in every statement is one string, not a copy each).
   */
  written(k: number): string {
    const start = this.starts[k];
    const end = this.ends[k];
    const id = this.textIds[k];
    const known = this.spellings[id];
    if (known !== undefined && known.length === end - start && this.sql.startsWith(known, start)) return known;
    const text = this.sql.slice(start, end);
    this.spellings[id] = text;
    return text;
  }

  /** SqlToken.prefix of token k ('' but for strings). */
  prefix(k: number): string {
    return this.kinds[k] === STRING ? this.texts[this.textIds[k]] : '';
  }

  quote(k: number): string {
    return QUOTE_TEXTS.get(this.quotes[k]) ?? String.fromCharCode(this.quotes[k]);
  }

  condition(k: number): string {
    return this.texts[this.conditionIds[k]];
  }

  /** Token k as an object (made once, then the same object); undefined outside the script. */
  token(k: number): SqlToken | undefined {
    if (k < 0 || k >= this.length) return undefined;
    if (this.every !== undefined) return this.every[k];
    this.made ??= new Map();
    let t = this.made.get(k);
    if (t === undefined) {
      t = this.make(k);
      this.made.set(k, t);
    }
    return t;
  }

  /** Every token as an object, for the readers of statements the parser reads (made once). */
  all(): readonly SqlToken[] {
    if (this.every === undefined) {
      const every: SqlToken[] = [];
      for (let k = 0; k < this.length; k++) every.push(this.made?.get(k) ?? this.make(k));
      this.every = every;
      this.made = undefined;
    }
    return this.every;
  }

  private make(k: number): SqlToken {
    return {
      kind: KIND_NAMES[this.kinds[k]]!,
      start: this.starts[k],
      end: this.ends[k],
      text: this.text(k),
      prefix: this.prefix(k),
      contentStart: this.contentStarts[k],
      contentEnd: this.contentEnds[k],
      quote: this.quote(k),
      condition: this.condition(k),
    };
  }
}

export interface TokenizeLimits {
  readonly maxDepth: number;
}

/** Maps offsets to 1-based line:column for error messages and value locations. */
export class SourcePositions {
  private readonly lineStarts: number[] = [0];

  constructor(source: string) {
    for (let i = source.indexOf('\n'); i !== -1; i = source.indexOf('\n', i + 1)) this.lineStarts.push(i + 1);
  }

  lineColumn(offset: number): { line: number; column: number } {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - this.lineStarts[lo] + 1 };
  }

  describe(offset: number): string {
    const { line, column } = this.lineColumn(offset);
    return `line ${line}, column ${column}`;
  }
}

const STRING_PREFIXES_COMMON = new Set(['N', 'X', 'B']);
const MULTI_CHAR_OPS = ['<=>', '->>', '#>>', '<>', '!=', '<=', '>=', '==', '||', '::', '->', '#>', '<<', '>>', '&&', '@>', '<@', ':='];
/** The operators above by their first character (in the same order), so an operator tries only its own. */
const OPS_BY_FIRST: readonly (readonly string[])[] = Array.from({ length: 128 }, (_, c) => MULTI_CHAR_OPS.filter((op) => op.charCodeAt(0) === c));

function isWordStart(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c >= 128;
}
function isWordPart(c: number): boolean {
  return isWordStart(c) || (c >= 48 && c <= 57) || c === 36;
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isHexDigit(c: number): boolean {
  return (c >= 48 && c <= 57) || ((c | 32) >= 97 && (c | 32) <= 102);
}
/** White space every dialect agrees on. A no-break space is not (MySQL and PostgreSQL read it as part of a name). */
function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 11;
}

export function malformed(positions: SourcePositions, offset: number, reason: string): DpgError {
  return new DpgError('MALFORMED_DATA_SET', `SQL does not parse at ${positions.describe(offset)}: ${reason}`);
}

/** Splits `sql` into tokens (comments and white space dropped). Throws MALFORMED_DATA_SET. */
export function tokenizeSql(sql: string, dialect: SqlDialect, positions: SourcePositions, limits: TokenizeLimits): SqlLexed {
  const n = sql.length;
  // About one token per five characters in typical scripts; the arrays double when that is short.
  const tokens = new SqlTokens(sql, (n >> 2) + 16);
  const hidden: number[] = [];
  // Texts every script has, so punctuation never looks its text up.
  const openId = tokens.intern('(');
  const closeId = tokens.intern(')');
  const commaId = tokens.intern(',');
  const semiId = tokens.intern(';');
  const dotId = tokens.intern('.');
  const questionId = tokens.intern('?');
  let depth = 0;
  let i = sql.charCodeAt(0) === 0xfeff ? 1 : 0; // a byte order mark opens many saved T-SQL scripts
  // Servers disagree about a NUL in the text (MySQL may end the statement there, PostgreSQL refuses it).
  const nul = sql.indexOf('\0');
  if (nul !== -1) throw malformed(positions, nul, 'a NUL character in the text is read differently by different servers');
  /** The executable comment being read: where it opened, and its condition ('' = always runs). */
  let execOpen = -1;
  /** Its condition, as an index into tokens.texts (0: '', always runs). */
  let conditionId = 0;

  /** Scans a quoted run starting at the opening quote; returns the offset after the closing quote. */
  const scanQuoted = (open: number, quote: number, backslash: boolean, doubled: boolean, what: string): number => {
    let j = open + 1;
    for (;;) {
      if (j >= n) throw malformed(positions, open, `unterminated ${what}`);
      const c = sql.charCodeAt(j);
      if (backslash && c === 92) {
        j += 2;
        continue;
      }
      if (c === quote) {
        if (sql.charCodeAt(j + 1) === quote) {
          if (!doubled) {
            throw malformed(positions, j, `${dialect.name} does not read a doubled quote as one quote; escape it with a backslash`);
          }
          j += 2;
          continue;
        }
        return j + 1;
      }
      j++;
    }
  };

  /** Adds the string token whose quote is at `quoteAt`; returns the offset after it. */
  const pushString = (start: number, prefix: string, quoteAt: number, backslash: boolean): number => {
    const quote = sql.charCodeAt(quoteAt);
    if (!dialect.doubledQuoteEscape && sql.charCodeAt(quoteAt + 1) === quote && sql.charCodeAt(quoteAt + 2) === quote) {
      throw malformed(positions, quoteAt, 'triple-quoted strings are not accepted; use a quoted string with backslash escapes');
    }
    const end = scanQuoted(quoteAt, quote, backslash, dialect.doubledQuoteEscape, 'string');
    tokens.add(STRING, start, end, prefix === '' ? 0 : tokens.intern(prefix), quote, conditionId, quoteAt + 1, end - 1);
    return end;
  };

  const stringPrefixAllowed = (prefix: string): boolean => {
    if (STRING_PREFIXES_COMMON.has(prefix)) return true;
    if (dialect.name === 'postgresql' && prefix === 'E') return true;
    if (dialect.name === 'bigquery') return prefix === 'R' || prefix === 'RB' || prefix === 'BR';
    return false;
  };

  // The helpers below return the offset to go on from rather than setting `i`: a variable an inner
  // function writes lives in a heap context, and `i` is touched for every character.

  /** A line comment at `at` (its marker `width` long) runs to the end of the line. */
  const lineComment = (at: number, width: number): number => {
    if (execOpen >= 0) throw malformed(positions, at, 'a line comment inside an executable comment (/*! … */) is read differently by MySQL and MariaDB versions');
    let eol = sql.indexOf('\n', at + width);
    if (eol === -1) eol = n;
    // PostgreSQL also ends a line comment at a carriage return; MySQL and SQLite do not.
    const cr = sql.indexOf('\r', at + width);
    if (cr !== -1 && cr < eol && sql.charCodeAt(cr + 1) !== 10) {
      throw malformed(positions, cr, 'a line comment ending in a bare carriage return is read differently by different servers');
    }
    hidden.push(at, eol);
    return eol === n ? n : eol + 1;
  };

  /** A block comment from the `/*` at `at`, nesting as the dialect does. */
  const blockComment = (at: number): number => {
    let level = 1;
    let j = at + 2;
    while (level > 0) {
      const close = sql.indexOf('*/', j);
      if (close === -1) throw malformed(positions, at, 'unterminated comment');
      const open = dialect.nestedComments === 'flat' ? -1 : sql.indexOf('/*', j);
      if (open !== -1 && open < close) {
        if (dialect.nestedComments === 'refuse') {
          throw malformed(positions, open, `'/*' inside a comment: ${dialect.name} servers disagree on whether comments nest`);
        }
        level++;
        j = open + 2;
        continue;
      }
      level--;
      j = close + 2;
    }
    hidden.push(at, j);
    return j;
  };

  /**
   * `/*!`, `/*!NNNNN`, `/*M!`, `/*M!NNNNN` (MySQL family): the server runs the text inside, so it
   * is read as SQL. `/*!` alone always runs; a version, or MariaDB's M, makes it depend on the
   * server, and script.ts accepts such text only as whole statements. Returns -1 for a plain comment.
   */
  const executableComment = (at: number): number => {
    let j = at + 2;
    const mariadb = sql.charCodeAt(j) === 77; // M
    if (mariadb) j++;
    if (sql.charCodeAt(j) !== 33) return -1; // '!'
    j++;
    const digitsStart = j;
    while (isDigit(sql.charCodeAt(j))) j++;
    const digits = j - digitsStart;
    if (digits !== 0 && digits !== 5 && digits !== 6) {
      throw malformed(positions, at, 'an executable comment needs a 5- or 6-digit version (/*!50001 … */)');
    }
    execOpen = at;
    conditionId = mariadb || digits > 0 ? tokens.intern(sql.slice(at + 2, j)) : 0;
    hidden.push(at, j);
    return j;
  };

  while (i < n) {
    const c = sql.charCodeAt(i);
    if (isSpace(c)) {
      i++;
      continue;
    }
    // the end of an executable comment
    if (execOpen >= 0 && c === 42 && sql.charCodeAt(i + 1) === 47) {
      hidden.push(i, i + 2);
      execOpen = -1;
      conditionId = 0;
      i += 2;
      continue;
    }
    // comments
    if (c === 45 && sql.charCodeAt(i + 1) === 45) {
      const next = sql.charCodeAt(i + 2);
      // MySQL: white space or a control character must follow (the end of the text counts).
      if (!dialect.dashCommentNeedsSpace || next !== next || next <= 32 || next === 127) {
        i = lineComment(i, 2);
        continue;
      }
    }
    if ((c === 35 && dialect.hashComments) || (c === 47 && sql.charCodeAt(i + 1) === 47 && dialect.slashSlashComments)) {
      i = lineComment(i, c === 35 ? 1 : 2);
      continue;
    }
    if (c === 47 && sql.charCodeAt(i + 1) === 42) {
      if (execOpen >= 0) throw malformed(positions, i, 'a comment inside an executable comment (/*! … */) is read differently by MySQL and MariaDB versions');
      const executable = dialect.executableComments ? executableComment(i) : -1;
      i = executable === -1 ? blockComment(i) : executable;
      continue;
    }
    // strings and quoted identifiers
    if (c === 39) {
      i = pushString(i, '', i, dialect.backslashEscapes);
      continue;
    }
    if (c === 34) {
      if (dialect.doubleQuoteIsString) {
        i = pushString(i, '', i, dialect.backslashEscapes);
      } else {
        const end = scanQuoted(i, 34, false, true, 'quoted identifier');
        tokens.add(IDENT, i, end, tokens.intern(sql.slice(i + 1, end - 1).replaceAll('""', '"')), 34, conditionId);
        i = end;
      }
      continue;
    }
    if (c === 96 && dialect.backtickIdentifiers) {
      const end = scanQuoted(i, 96, false, true, 'quoted identifier');
      tokens.add(IDENT, i, end, tokens.intern(sql.slice(i + 1, end - 1).replaceAll('``', '`')), 96, conditionId);
      i = end;
      continue;
    }
    if (c === 91 && dialect.bracketIdentifiers) {
      const end = scanQuoted(i, 93, false, true, 'bracketed identifier');
      tokens.add(IDENT, i, end, tokens.intern(sql.slice(i + 1, end - 1).replaceAll(']]', ']')), 91, conditionId);
      i = end;
      continue;
    }
    if (c === 36) {
      if (dialect.dollarStrings) {
        // PostgreSQL's tags follow its identifier rule: letters (anything above U+007F too), digits, `_`.
        const delimiter = dialect.dollarTags
          ? /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, i + 130))?.[0]
          : sql.startsWith('$$', i)
            ? '$$'
            : undefined;
        if (delimiter !== undefined) {
          const close = sql.indexOf(delimiter, i + delimiter.length);
          if (close === -1) throw malformed(positions, i, 'unterminated dollar-quoted string');
          tokens.add(STRING, i, close + delimiter.length, tokens.intern('$'), 36, conditionId, i + delimiter.length, close);
          i = close + delimiter.length;
          continue;
        }
      }
      if (isDigit(sql.charCodeAt(i + 1))) {
        let j = i + 1;
        while (j < n && isDigit(sql.charCodeAt(j))) j++;
        tokens.add(PARAM, i, j, tokens.intern(sql.slice(i, j)), 0, conditionId);
        i = j;
        continue;
      }
      // Snowflake's session variables: $name.
      if (dialect.name === 'snowflake' && isWordStart(sql.charCodeAt(i + 1))) {
        let j = i + 1;
        while (j < n && isWordPart(sql.charCodeAt(j)) && sql.charCodeAt(j) !== 36) j++;
        tokens.add(PARAM, i, j, tokens.intern(sql.slice(i, j)), 0, conditionId);
        i = j;
        continue;
      }
    }
    // numbers
    if (isDigit(c) || (c === 46 && isDigit(sql.charCodeAt(i + 1)))) {
      let j = i;
      if (c === 48 && (sql.charCodeAt(i + 1) | 32) === 120) {
        j = i + 2;
        while (j < n && isHexDigit(sql.charCodeAt(j))) j++;
      } else if (c === 48 && sql.charCodeAt(i + 1) === 98 && dialect.digitLedIdentifiers) {
        // MySQL's bit-value literal 0b0101 (a binary string); 0b2 or 0B1 is a name there.
        j = i + 2;
        while (j < n && (sql.charCodeAt(j) === 48 || sql.charCodeAt(j) === 49)) j++;
      } else {
        while (j < n && isDigit(sql.charCodeAt(j))) j++;
        if (sql.charCodeAt(j) === 46) {
          j++;
          while (j < n && isDigit(sql.charCodeAt(j))) j++;
        }
        if ((sql.charCodeAt(j) | 32) === 101) {
          let k = j + 1;
          if (sql.charCodeAt(k) === 43 || sql.charCodeAt(k) === 45) k++;
          if (isDigit(sql.charCodeAt(k))) {
            j = k;
            while (j < n && isDigit(sql.charCodeAt(j))) j++;
          }
        }
      }
      if (j < n && isWordPart(sql.charCodeAt(j)) && c !== 46) {
        // A digit run running into letters: a name in MySQL (1abc); PostgreSQL 16 reads 4111_1111
        // as a number, older servers as a number and an alias. Only where it is always a name is it accepted.
        if (!dialect.digitLedIdentifiers) throw malformed(positions, i, 'a number directly followed by letters or _ is read differently by different servers');
        while (j < n && isWordPart(sql.charCodeAt(j))) j++;
        tokens.add(WORD, i, j, tokens.intern(sql.slice(i, j).toUpperCase()), 0, conditionId);
      } else {
        // A number's text is read from its span (SqlToken.text holds it too, made when asked for).
        tokens.add(NUMBER, i, j, 0, 0, conditionId);
      }
      i = j;
      continue;
    }
    // words, and string prefixes glued to a quote (N'…', E'…', X'…', r"…")
    if (isWordStart(c)) {
      let j = i + 1;
      // Lower-case or non-ASCII letters: only then does the word need upper-casing (a copy).
      let cased = (c >= 97 && c <= 122) || c >= 128;
      for (let w = sql.charCodeAt(j); j < n && isWordPart(w); w = sql.charCodeAt(++j)) if ((w >= 97 && w <= 122) || w >= 128) cased = true;
      const upperId = tokens.intern(cased ? sql.slice(i, j).toUpperCase() : sql.slice(i, j));
      const upper = tokens.texts[upperId];
      const next = sql.charCodeAt(j);
      // PostgreSQL U&'…' (Unicode escapes); U&"…" names and UESCAPE (another escape character) are not read.
      if (dialect.name === 'postgresql' && upper === 'U' && next === 38 && (sql.charCodeAt(j + 1) === 39 || sql.charCodeAt(j + 1) === 34)) {
        if (sql.charCodeAt(j + 1) === 34) throw malformed(positions, i, 'U&"…" names (Unicode escapes in identifiers) are not read; write the name plainly');
        i = pushString(i, 'U&', j + 1, false);
        continue;
      }
      if (dialect.name === 'postgresql' && upper === 'UESCAPE') throw malformed(positions, i, 'UESCAPE (another escape character for U&\'…\') is not read; use the default \\');
      if ((next === 39 || (next === 34 && dialect.doubleQuoteIsString)) && stringPrefixAllowed(upper)) {
        const raw = upper.includes('R');
        i = pushString(i, upper, j, upper === 'E' || (dialect.backslashEscapes && !raw) || raw);
        continue;
      }
      tokens.add(WORD, i, j, upperId, 0, conditionId);
      i = j;
      continue;
    }
    // parameters and variables
    if (c === 63) {
      tokens.add(PARAM, i, i + 1, questionId, 0, conditionId);
      i++;
      continue;
    }
    if (c === 64 || (c === 58 && isWordStart(sql.charCodeAt(i + 1)))) {
      let j = i + 1;
      if (sql.charCodeAt(j) === 64) j++;
      while (j < n && isWordPart(sql.charCodeAt(j))) j++;
      tokens.add(PARAM, i, j, tokens.intern(sql.slice(i, j)), 0, conditionId);
      i = j;
      continue;
    }
    // punctuation
    if (c === 40) {
      depth++;
      if (depth > limits.maxDepth) throw malformed(positions, i, `nesting deeper than ${limits.maxDepth} levels`);
      tokens.add(OPEN, i, i + 1, openId, 0, conditionId);
      i++;
      continue;
    }
    if (c === 41) {
      depth--;
      tokens.add(CLOSE, i, i + 1, closeId, 0, conditionId);
      i++;
      continue;
    }
    if (c === 44) {
      tokens.add(COMMA, i, i + 1, commaId, 0, conditionId);
      i++;
      continue;
    }
    if (c === 59) {
      tokens.add(SEMI, i, i + 1, semiId, 0, conditionId);
      i++;
      continue;
    }
    if (c === 46) {
      tokens.add(DOT, i, i + 1, dotId, 0, conditionId);
      i++;
      continue;
    }
    // SQLite has no `#` token, but the parser here reads `#` as a comment: refuse, as SQLite does.
    if (c === 35 && dialect.name === 'sqlite') throw malformed(positions, i, "unrecognised token '#'");
    let op = sql[i];
    if (c < 128) {
      for (const candidate of OPS_BY_FIRST[c]) {
        if (sql.startsWith(candidate, i)) {
          op = candidate;
          break;
        }
      }
    }
    tokens.add(OP, i, i + op.length, tokens.intern(op), 0, conditionId);
    i += op.length;
  }
  if (execOpen >= 0) throw malformed(positions, execOpen, 'unterminated executable comment');
  return { tokens, hidden };
}
