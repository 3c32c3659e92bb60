// The token-level path: recognises, on the tokens alone, the statements whose every value is a plain
// literal in a place that names its column, so node-sql-parser's tree would add nothing the codec
// uses. Most of what clients send is of this kind:
//
//   INSERT INTO t (a, b) VALUES (lit, lit), (lit, lit)
//   UPDATE t SET a = lit, b = lit [WHERE conditions]
//   DELETE FROM t [WHERE conditions]
//   SELECT a, b FROM t [WHERE conditions]
//
// where a condition is `col op lit`, `col [NOT] IN (lit, …)`, `col [NOT] BETWEEN lit AND lit`,
// `col [NOT] LIKE lit` or `col IS [NOT] NULL`, joined by AND / OR. Anything else — an alias, a
// function, a parenthesised condition, a keyword where a name stands, a prefixed or typed literal,
// a variable or parameter — is left to the full parser (DESIGN §9: when in doubt, the parser reads
// it). test/formats/sql/paths-agree.test.ts holds both readings to the same result.

import type { SqlDialect } from './dialects.ts';
import { PARSER_RESERVED_WORDS } from './reserved-words.ts';
import { CLOSE, COMMA, DOT, IDENT, NUMBER, OP, OPEN, STRING, WORD, type SqlTokens } from './tokenizer.ts';

/** What node-sql-parser's tree says about a plain statement, read off its tokens instead. */
export interface PlainStatement {
  readonly plain: true;
  readonly type: 'insert' | 'update' | 'delete' | 'select';
  /** The table as the parser names it: the last part, quotes removed, case as written. */
  readonly table: string;
  /** SELECT: the output columns, as written (unqualified names). */
  readonly outputs: readonly string[];
  /** UPDATE: the SET targets, as written. */
  readonly setColumns: readonly string[];
  /**
   * Where its parts stand, found in the same pass (token indexes), so the statement reader builds
   * the statement's shape without walking its tokens again. INSERT: the column names' tokens.
   */
  readonly columns: readonly number[];
  /** INSERT: the [first, end) token range of each value, as pairs, row after row (each row as wide as `columns`). */
  readonly values: readonly number[];
  /** UPDATE: per assignment, its column's token and its value's [first, end) range, as triples. */
  readonly assignments: readonly number[];
  /** The WHERE conditions that compare a column with literals, in order. */
  readonly conditions: readonly PlainCondition[];
}

/** `column op literal(s)`: the column's tokens [first, end), the operator as the reader names it, the literals' ranges. */
export interface PlainCondition {
  readonly columnFirst: number;
  readonly columnEnd: number;
  /** The operator token's text, `NOT ` before a negated IN, LIKE or BETWEEN. */
  readonly operator: string;
  /** [first, end) token range of each literal, as pairs. */
  readonly literals: readonly number[];
}

/** The empty list, shared: a plain statement lacks most parts. */
const NONE: readonly never[] = Object.freeze([]);
const COMPARISON = new Set(['=', '<>', '!=', '<', '>', '<=', '>=']);
/** A quoted name with nothing the grammars could read two ways: no quotes, escapes or control characters. */
const PLAIN_QUOTED = /^[A-Za-z0-9_ $#@.-]+$/;

/**
 * sql[from, to) is a plain unquoted name, `[A-Za-z_][A-Za-z0-9_]*` (a word token starts with a letter
 * or `_`): `$` and letters beyond ASCII are read differently by the parser's grammars.
 */
function plainWord(sql: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = sql.charCodeAt(i);
    if (!((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || (c >= 48 && c <= 57 && i > from))) return false;
  }
  return true;
}

/** sql[from, to) is an unsigned decimal number every grammar reads as one number token: `\d+(\.\d+)?`. */
function plainNumber(sql: string, from: number, to: number): boolean {
  let i = from;
  while (i < to && isDigit(sql.charCodeAt(i))) i++;
  if (i === from) return false;
  if (i === to) return true;
  if (sql.charCodeAt(i) !== 46) return false;
  const fraction = ++i;
  while (i < to && isDigit(sql.charCodeAt(i))) i++;
  return i === to && i > fraction;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** Reads the statement in tokens [first, end) (its `;` excluded) as a plain statement, or undefined. */
export function readPlainStatement(sql: string, dialect: SqlDialect, tokens: SqlTokens, first: number, end: number): PlainStatement | undefined {
  return new PlainReader(sql, dialect, tokens, end).statement(first);
}

class PlainReader {
  /** Made on the first condition: most statements have none. */
  private conditions: PlainCondition[] | undefined;

  constructor(
    private readonly sql: string,
    private readonly dialect: SqlDialect,
    private readonly tokens: SqlTokens,
    private readonly end: number,
  ) {}

  statement(i: number): PlainStatement | undefined {
    const conditions = this.tokens.conditionIds;
    for (let k = i; k < this.end; k++) if (conditions[k] !== 0) return undefined;
    const head = this.word(i);
    if (head === 'INSERT') return this.insert(i + 1);
    if (head === 'UPDATE') return this.update(i + 1);
    // BigQuery's grammar reads `DELETE FROM t` with FROM as the table name, Snowflake's refuses
    // `DELETE … WHERE`: their DELETEs stay with the parser, which reads them as it always has.
    if (head === 'DELETE' && this.dialect.name !== 'bigquery' && this.dialect.name !== 'snowflake') return this.delete(i + 1);
    if (head === 'SELECT') return this.select(i + 1);
    return undefined;
  }

  private insert(i: number): PlainStatement | undefined {
    if (this.word(i) !== 'INTO') return undefined;
    const table = this.table(i + 1);
    if (table === undefined) return undefined;
    let k = table[1];
    if (!this.is(k, OPEN)) return undefined;
    const columnTokens: number[] = [];
    k++;
    for (;;) {
      if (this.name(k) === undefined) return undefined;
      columnTokens.push(k);
      k++;
      if (this.is(k, COMMA)) k++;
      else if (this.is(k, CLOSE)) break;
      else return undefined;
    }
    k++;
    if (this.word(k) !== 'VALUES') return undefined;
    k++;
    const values: number[] = [];
    for (;;) {
      if (!this.is(k, OPEN)) return undefined;
      k++;
      const rowStart = values.length;
      for (;;) {
        const next = this.value(k);
        if (next === -1) return undefined;
        values.push(k, next);
        k = next;
        if (this.is(k, COMMA)) k++;
        else if (this.is(k, CLOSE)) break;
        else return undefined;
      }
      if (values.length - rowStart !== 2 * columnTokens.length) return undefined;
      k++;
      if (k === this.end) return this.found('insert', table[0], NONE, NONE, columnTokens, values, NONE);
      if (!this.is(k, COMMA)) return undefined;
      k++;
    }
  }

  private update(i: number): PlainStatement | undefined {
    const table = this.table(i);
    if (table === undefined || this.word(table[1]) !== 'SET') return undefined;
    let k = table[1] + 1;
    const setColumns: string[] = [];
    const assignments: number[] = [];
    for (;;) {
      const column = this.name(k);
      if (column === undefined || !this.isOp(k + 1, '=')) return undefined;
      const next = this.value(k + 2);
      if (next === -1) return undefined;
      setColumns.push(column);
      assignments.push(k, k + 2, next);
      k = next;
      if (this.is(k, COMMA)) k++;
      else break;
    }
    if (!this.where(k)) return undefined;
    return this.found('update', table[0], NONE, setColumns, NONE, NONE, assignments);
  }

  private delete(i: number): PlainStatement | undefined {
    if (this.word(i) !== 'FROM') return undefined;
    const table = this.table(i + 1);
    if (table === undefined || !this.where(table[1])) return undefined;
    return this.found('delete', table[0], NONE, NONE, NONE, NONE, NONE);
  }

  private select(i: number): PlainStatement | undefined {
    const outputs: string[] = [];
    let k = i;
    for (;;) {
      // Unquoted names only: some grammars read a quoted one in a SELECT list as a string, or leave it unnamed.
      const column = this.is(k, WORD) ? this.name(k) : undefined;
      if (column === undefined) return undefined;
      outputs.push(column);
      k++;
      if (this.is(k, COMMA)) k++;
      else break;
    }
    if (this.word(k) !== 'FROM') return undefined;
    const table = this.table(k + 1);
    if (table === undefined || !this.where(table[1])) return undefined;
    return this.found('select', table[0], outputs, NONE, NONE, NONE, NONE);
  }

  private found(
    type: PlainStatement['type'],
    table: string,
    outputs: readonly string[],
    setColumns: readonly string[],
    columns: readonly number[],
    values: readonly number[],
    assignments: readonly number[],
  ): PlainStatement {
    return { plain: true, type, table, outputs, setColumns, columns, values, assignments, conditions: this.conditions ?? NONE };
  }

  /** The end of the statement, or `WHERE` and conditions joined by AND / OR up to it. */
  private where(i: number): boolean {
    if (i === this.end) return true;
    if (this.word(i) !== 'WHERE') return false;
    let k = i + 1;
    for (;;) {
      k = this.condition(k);
      if (k === -1) return false;
      if (k === this.end) return true;
      const join = this.word(k);
      if (join !== 'AND' && join !== 'OR') return false;
      k++;
    }
  }

  /** One `column op literal` condition at i, recorded; returns the index after it, or -1. */
  private condition(i: number): number {
    const columnEnd = this.columnRef(i);
    if (columnEnd === -1) return -1;
    let k = columnEnd;
    if (k >= this.end) return -1;
    // Comparisons take unsigned literals only: a sign there is an expression to some grammars.
    if (this.tokens.kinds[k] === OP) {
      const op = this.tokens.text(k);
      return COMPARISON.has(op) ? this.compared(i, columnEnd, op, [k + 1]) : -1;
    }
    if (this.word(k) === 'IS') {
      k++;
      if (this.word(k) === 'NOT') k++;
      return this.word(k) === 'NULL' ? k + 1 : -1;
    }
    const not = this.word(k) === 'NOT';
    if (not) k++;
    const op = this.word(k);
    const operator = not ? 'NOT ' + op : (op ?? '');
    if (op === 'LIKE') return this.compared(i, columnEnd, operator, [k + 1]);
    if (op === 'BETWEEN') {
      const low = this.literal(k + 1, false);
      return low !== -1 && this.word(low) === 'AND' ? this.compared(i, columnEnd, operator, [k + 1, low + 1]) : -1;
    }
    if (op === 'IN') {
      k++;
      if (!this.is(k, OPEN)) return -1;
      const starts: number[] = [];
      k++;
      for (;;) {
        starts.push(k);
        k = this.literal(k, false);
        if (k === -1) return -1;
        if (this.is(k, COMMA)) k++;
        else if (this.is(k, CLOSE)) return this.compared(i, columnEnd, operator, starts, k + 1);
        else return -1;
      }
    }
    return -1;
  }

  /**
   * Records a condition: the column at [columnFirst, columnEnd), the literals starting at `starts`
   * (unsigned). Returns the index after the condition: `after`, else the end of the last literal; -1
   * when a literal is not one.
   */
  private compared(columnFirst: number, columnEnd: number, operator: string, starts: readonly number[], after = -1): number {
    const literals: number[] = [];
    let end = -1;
    for (const start of starts) {
      end = this.literal(start, false);
      if (end === -1) return -1;
      literals.push(start, end);
    }
    (this.conditions ??= []).push({ columnFirst, columnEnd, operator, literals });
    return after === -1 ? end : after;
  }

  /** `name` or `qualifier.name` at i; returns the index after it, or -1. */
  private columnRef(i: number): number {
    if (this.name(i) === undefined) return -1;
    if (!this.is(i + 1, DOT)) return i + 1;
    return this.name(i + 2) === undefined ? -1 : i + 3;
  }

  /** A table: `name` or `schema.name`; returns the parser's name for it and the index after it. */
  private table(i: number): [string, number] | undefined {
    const first = this.name(i);
    if (first === undefined) return undefined;
    if (!this.is(i + 1, DOT)) return [first, i + 1];
    const second = this.name(i + 2);
    return second === undefined || this.is(i + 3, DOT) ? undefined : [second, i + 3];
  }

  /** A VALUES item or SET value: a literal, numbers signed or not. */
  private value(i: number): number {
    return this.literal(i, true);
  }

  /** A plain literal at i — an unprefixed string, a decimal number, NULL, TRUE, FALSE; returns the index after it, or -1. */
  private literal(i: number, signed: boolean): number {
    if (i < 0 || i >= this.end) return -1;
    const { kinds, starts, ends } = this.tokens;
    const kind = kinds[i];
    let end = -1;
    // A string without a prefix (its prefix text is '', index 0), not dollar-quoted.
    if (kind === STRING) end = this.tokens.textIds[i] === 0 && this.tokens.quotes[i] !== 36 ? i + 1 : -1;
    else if (kind === NUMBER) end = plainNumber(this.sql, starts[i], ends[i]) ? i + 1 : -1;
    else if (kind === WORD) {
      const text = this.tokens.text(i);
      end = text === 'NULL' || text === 'TRUE' || text === 'FALSE' ? i + 1 : -1;
    } else if (signed && kind === OP && this.tokens.text(i) === '-') {
      end = i + 1 < this.end && kinds[i + 1] === NUMBER && starts[i + 1] === ends[i] && plainNumber(this.sql, starts[i + 1], ends[i + 1]) ? i + 2 : -1;
    }
    if (end === -1) return -1;
    // Whatever follows a value must end it: an operator, `(`, `.` or `::` would make it an expression.
    if (end < this.end) {
      const after = kinds[end];
      if (after === OP || after === OPEN || after === DOT || after === STRING || after === NUMBER) return -1;
    }
    return end;
  }

  /** A plain name at i (unquoted and not a keyword, or quoted without anything to escape), as written. */
  private name(i: number): string | undefined {
    if (i < 0 || i >= this.end) return undefined;
    const tokens = this.tokens;
    const kind = tokens.kinds[i];
    if (kind === WORD) {
      const start = tokens.starts[i];
      const end = tokens.ends[i];
      if (!plainWord(this.sql, start, end)) return undefined;
      const upper = tokens.text(i);
      if (PARSER_RESERVED_WORDS.has(upper)) return undefined;
      return tokens.written(i);
    }
    if (kind === IDENT) {
      const quote = tokens.quotes[i];
      // A `"…"` name the server may read as a string is the parser's to read (SQLite, T-SQL).
      if (quote === 34 && this.dialect.doubleQuotedNameMayBeString) return undefined;
      // The SQLite grammar has no [name] in every place a name stands.
      if (quote === 91 && this.dialect.name !== 'transactsql') return undefined;
      const text = tokens.text(i);
      return PLAIN_QUOTED.test(text) ? text : undefined;
    }
    return undefined;
  }

  private word(i: number): string | undefined {
    return i >= 0 && i < this.end && this.tokens.kinds[i] === WORD ? this.tokens.text(i) : undefined;
  }

  /** Token i is of this kind (a kind code of tokenizer.ts). */
  private is(i: number, kind: number): boolean {
    return i >= 0 && i < this.end && this.tokens.kinds[i] === kind;
  }

  private isOp(i: number, op: string): boolean {
    return this.is(i, OP) && this.tokens.text(i) === op;
  }
}
