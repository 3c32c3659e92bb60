// A dialect-aware SQL lexer: finds every literal, identifier and operator with its exact source span,
// so protected literals can be spliced back into the original text without touching anything else.

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
  /** string: upper-cased prefix ('' , 'N', 'E', 'X', 'B', 'R', …) or '$' for dollar-quoted. */
  readonly prefix: string;
  /** string: the content between the quotes, still escaped as written. */
  readonly contentStart: number;
  readonly contentEnd: number;
  /** string: the quote character (' or "), or '$' for dollar-quoted. */
  readonly quote: string;
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

function isWordStart(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c >= 128;
}
function isWordPart(c: number): boolean {
  return isWordStart(c) || (c >= 48 && c <= 57) || c === 36;
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function malformed(positions: SourcePositions, offset: number, reason: string): DpgError {
  return new DpgError('MALFORMED_DATA_SET', `SQL does not parse at ${positions.describe(offset)}: ${reason}`);
}

/** Splits `sql` into tokens (comments and white space dropped). Throws MALFORMED_DATA_SET. */
export function tokenizeSql(sql: string, dialect: SqlDialect, positions: SourcePositions, limits: TokenizeLimits): SqlToken[] {
  const tokens: SqlToken[] = [];
  const n = sql.length;
  let depth = 0;
  let i = 0;

  const push = (kind: SqlTokenKind, start: number, end: number, text: string): void => {
    tokens.push({ kind, start, end, text, prefix: '', contentStart: 0, contentEnd: 0, quote: '' });
  };

  /** Scans a quoted run starting at the opening quote; returns the offset after the closing quote. */
  const scanQuoted = (open: number, quote: number, backslash: boolean, what: string): number => {
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
          j += 2;
          continue;
        }
        return j + 1;
      }
      j++;
    }
  };

  const pushString = (start: number, prefix: string, quoteAt: number, backslash: boolean): void => {
    const quote = sql.charCodeAt(quoteAt);
    const end = scanQuoted(quoteAt, quote, backslash, 'string');
    tokens.push({
      kind: 'string',
      start,
      end,
      text: '',
      prefix,
      contentStart: quoteAt + 1,
      contentEnd: end - 1,
      quote: String.fromCharCode(quote),
    });
  };

  const stringPrefixAllowed = (prefix: string): boolean => {
    if (STRING_PREFIXES_COMMON.has(prefix)) return true;
    if (dialect.name === 'postgresql' && prefix === 'E') return true;
    if (dialect.name === 'bigquery') return prefix === 'R' || prefix === 'RB' || prefix === 'BR';
    return false;
  };

  while (i < n) {
    const c = sql.charCodeAt(i);
    // white space
    if (c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 11 || c === 0xa0 || c === 0xfeff) {
      i++;
      continue;
    }
    // comments
    if ((c === 45 && sql.charCodeAt(i + 1) === 45) || (c === 35 && dialect.hashComments) || (c === 47 && sql.charCodeAt(i + 1) === 47 && dialect.slashSlashComments)) {
      const eol = sql.indexOf('\n', i);
      i = eol === -1 ? n : eol + 1;
      continue;
    }
    if (c === 47 && sql.charCodeAt(i + 1) === 42) {
      const close = sql.indexOf('*/', i + 2);
      if (close === -1) throw malformed(positions, i, 'unterminated comment');
      i = close + 2;
      continue;
    }
    // strings and quoted identifiers
    if (c === 39) {
      pushString(i, '', i, dialect.backslashEscapes);
      i = tokens[tokens.length - 1].end;
      continue;
    }
    if (c === 34) {
      if (dialect.doubleQuoteIsString) {
        pushString(i, '', i, dialect.backslashEscapes);
        i = tokens[tokens.length - 1].end;
      } else {
        const end = scanQuoted(i, 34, false, 'quoted identifier');
        push('ident', i, end, sql.slice(i + 1, end - 1).replaceAll('""', '"'));
        i = end;
      }
      continue;
    }
    if (c === 96 && dialect.backtickIdentifiers) {
      const end = scanQuoted(i, 96, false, 'quoted identifier');
      push('ident', i, end, sql.slice(i + 1, end - 1).replaceAll('``', '`'));
      i = end;
      continue;
    }
    if (c === 91 && dialect.bracketIdentifiers) {
      const end = scanQuoted(i, 93, false, 'bracketed identifier');
      push('ident', i, end, sql.slice(i + 1, end - 1).replaceAll(']]', ']'));
      i = end;
      continue;
    }
    if (c === 36) {
      if (dialect.dollarStrings) {
        const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 66));
        if (m) {
          const delimiter = m[0];
          const close = sql.indexOf(delimiter, i + delimiter.length);
          if (close === -1) throw malformed(positions, i, 'unterminated dollar-quoted string');
          tokens.push({
            kind: 'string',
            start: i,
            end: close + delimiter.length,
            text: '',
            prefix: '$',
            contentStart: i + delimiter.length,
            contentEnd: close,
            quote: '$',
          });
          i = close + delimiter.length;
          continue;
        }
      }
      if (isDigit(sql.charCodeAt(i + 1))) {
        let j = i + 1;
        while (j < n && isDigit(sql.charCodeAt(j))) j++;
        push('param', i, j, sql.slice(i, j));
        i = j;
        continue;
      }
    }
    // numbers (a digit run running into letters is a MySQL-style identifier like 1abc)
    if (isDigit(c) || (c === 46 && isDigit(sql.charCodeAt(i + 1)))) {
      let j = i;
      if (c === 48 && (sql.charCodeAt(i + 1) | 32) === 120) {
        j = i + 2;
        while (j < n && /[0-9a-fA-F]/.test(sql[j])) j++;
      } else {
        while (j < n && isDigit(sql.charCodeAt(j))) j++;
        if (sql.charCodeAt(j) === 46) {
          j++;
          while (j < n && isDigit(sql.charCodeAt(j))) j++;
        }
        if ((sql.charCodeAt(j) | 32) === 101) {
          let k = j + 1;
          if (sql[k] === '+' || sql[k] === '-') k++;
          if (isDigit(sql.charCodeAt(k))) {
            j = k;
            while (j < n && isDigit(sql.charCodeAt(j))) j++;
          }
        }
      }
      if (j < n && isWordPart(sql.charCodeAt(j)) && c !== 46) {
        while (j < n && isWordPart(sql.charCodeAt(j))) j++;
        push('word', i, j, sql.slice(i, j).toUpperCase());
      } else {
        push('number', i, j, sql.slice(i, j));
      }
      i = j;
      continue;
    }
    // words, and string prefixes glued to a quote (N'…', E'…', X'…', r"…")
    if (isWordStart(c)) {
      let j = i + 1;
      while (j < n && isWordPart(sql.charCodeAt(j))) j++;
      const upper = sql.slice(i, j).toUpperCase();
      const next = sql.charCodeAt(j);
      if ((next === 39 || (next === 34 && dialect.doubleQuoteIsString)) && stringPrefixAllowed(upper)) {
        const raw = upper.includes('R');
        pushString(i, upper, j, upper === 'E' || (dialect.backslashEscapes && !raw) || raw);
        i = tokens[tokens.length - 1].end;
        continue;
      }
      push('word', i, j, upper);
      i = j;
      continue;
    }
    // parameters and variables
    if (c === 63) {
      push('param', i, i + 1, '?');
      i++;
      continue;
    }
    if (c === 64 || (c === 58 && isWordStart(sql.charCodeAt(i + 1)))) {
      let j = i + 1;
      if (sql.charCodeAt(j) === 64) j++;
      while (j < n && isWordPart(sql.charCodeAt(j))) j++;
      push('param', i, j, sql.slice(i, j));
      i = j;
      continue;
    }
    // punctuation
    if (c === 40) {
      depth++;
      if (depth > limits.maxDepth) throw malformed(positions, i, `nesting deeper than ${limits.maxDepth} levels`);
      push('open', i, i + 1, '(');
      i++;
      continue;
    }
    if (c === 41) {
      depth--;
      push('close', i, i + 1, ')');
      i++;
      continue;
    }
    if (c === 44) {
      push('comma', i, i + 1, ',');
      i++;
      continue;
    }
    if (c === 59) {
      push('semi', i, i + 1, ';');
      i++;
      continue;
    }
    if (c === 46) {
      push('dot', i, i + 1, '.');
      i++;
      continue;
    }
    let op = sql[i];
    for (const candidate of MULTI_CHAR_OPS) {
      if (sql.startsWith(candidate, i)) {
        op = candidate;
        break;
      }
    }
    push('op', i, i + op.length, op);
    i += op.length;
  }
  return tokens;
}
