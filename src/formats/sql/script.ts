// Reads a SQL script into what protection needs: per statement, the columns and the exact source
// spans of the literals bound to them (INSERT rows, SET assignments, comparisons), found on the
// tokens and cross-checked against node-sql-parser's tree (which has no positions for literals).

import { DpgError } from '../../core/errors.ts';
import type { SqlDialect } from './dialects.ts';
import { astColumn, astLiteralKey, AST_COMPARISON_OPS, columnNameOf, record, SYMMETRIC_OPS } from './ast.ts';
import { collectBindings, type SqlBinding } from './bindings.ts';
import { parseSqlStatements, type SqlAst } from './parser.ts';
import { readPlainStatement, type PlainStatement } from './plain-statements.ts';
import { guardScript } from './script-guards.ts';
import { EscapeError } from './escapes.ts';
import { decodeStringAt } from './literals.ts';
import { CLOSE, DOT, IDENT, NUMBER, OPEN, SEMI, SourcePositions, STRING, tokenizeSql, type SqlToken, type SqlTokens } from './tokenizer.ts';

export interface SqlLimits {
  /** Characters in the script. */
  readonly maxLength: number;
  readonly maxStatements: number;
  /** Parenthesis nesting. */
  readonly maxDepth: number;
}

export const DEFAULT_SQL_LIMITS: SqlLimits = { maxLength: 16 * 1024 * 1024, maxStatements: 100_000, maxDepth: 64 };

/**
 * `name`: a `"…"` name in a dialect where the server may read it as a string (SQLite, T-SQL):
 * found where a literal would be, so that a protected column bound to one is refused.
 */
export type LiteralKind = 'string' | 'number' | 'null' | 'bool' | 'name';

/** One literal in the source: the span replaced (a leading minus included) and the literal token. */
export interface LiteralSlot {
  readonly start: number;
  readonly end: number;
  /** The literal token's index in the script's tokens (SqlScript.tokens; `tokens.token(i)` is its object). */
  readonly token: number;
  readonly kind: LiteralKind;
  readonly negative: boolean;
}

/** An INSERT value or the right-hand side of a SET assignment. */
export interface ValueItem {
  readonly start: number;
  readonly end: number;
  /** Set when the whole item is one literal (`'x'`, `-5`, `NULL`, `DATE '2020-01-01'`). */
  readonly literal: LiteralSlot | undefined;
  /** String and number literals inside an expression item (`CONCAT('a', b)`); empty for single literals. */
  readonly inner: readonly LiteralSlot[];
  /** Lower-cased names of the session or script variables the item reads (`@n`, Snowflake's `$n`). */
  readonly variables: readonly string[];
}

export interface ColumnName {
  /** As written, quotes removed. */
  readonly name: string;
  /** Table or alias written before it (`u.email`), if any. */
  readonly qualifier: string | undefined;
  readonly start: number;
  readonly end: number;
}

export interface InsertShape {
  readonly table: string;
  readonly columns: readonly ColumnName[];
  /** One array of items per VALUES row (or per SELECT list of INSERT … SELECT). */
  readonly rows: readonly (readonly ValueItem[])[];
}

export interface Assignment {
  readonly column: ColumnName;
  readonly item: ValueItem;
  readonly start: number;
  readonly end: number;
}

export interface AssignmentList {
  readonly table: string | undefined;
  readonly items: readonly Assignment[];
  /** Start of an optional clause holding the list (ON DUPLICATE KEY UPDATE …); undefined for UPDATE … SET. */
  readonly clauseStart: number | undefined;
  /** What the clause becomes when every assignment in it is removed. */
  readonly emptyClause: string;
}

export interface Comparison {
  readonly column: ColumnName;
  readonly operator: string;
  readonly slots: readonly LiteralSlot[];
  /** Variables compared with the column (`name = @n`): their assigned literals are the column's data. */
  readonly variables: readonly string[];
}

/**
 * One assignment to a session or script variable: `SET @n = …`, `@n := …`, T-SQL `DECLARE @n T = …`
 * and `SELECT @n = …`, Snowflake `SET n = …`. A variable used where a protected column's value goes
 * is protected at every assignment (codec.ts).
 */
export interface VariableAssignment {
  /** The assigned value; undefined when the variable is filled from a query (`SELECT … INTO @n`, `FETCH … INTO`, `EXEC @n = …`). */
  readonly item: ValueItem | undefined;
  /** For query-filled variables: the statement carries a string or number literal or reads a variable (which may be what lands in it), or is a FETCH. */
  readonly statementHasLiteral: boolean;
  readonly start: number;
}

/** `name TEXT DEFAULT 'x'`, `ALTER COLUMN name SET DEFAULT 'x'`, T-SQL `DEFAULT N'x' FOR name`. */
export interface ColumnDefault {
  readonly column: ColumnName;
  readonly item: ValueItem;
}

/** A comparison of a column with literals as the parser saw it (for the cross-check). */
export interface AstComparison {
  readonly column: string;
  readonly qualifier: string | undefined;
  readonly keys: readonly string[];
}

export interface SqlStatement {
  readonly type: string;
  readonly start: number;
  /** End of the statement including its `;`. */
  readonly end: number;
  /** Lower-cased table name or alias → table name. */
  readonly tables: ReadonlyMap<string, string>;
  /** The table when the statement names exactly one. */
  readonly defaultTable: string | undefined;
  /** Lower-cased names of every table any FROM or JOIN of the statement reads, subqueries included. */
  readonly readTables: readonly string[];
  /** The table the statement fills from its values or query (INSERT, CREATE TABLE … AS, SELECT … INTO), lower-cased. */
  readonly writesTable: string | undefined;
  readonly insert: InsertShape | undefined;
  /** The INSERT has literal values but no column list to bind them with. */
  readonly insertWithoutColumns: boolean;
  /** SET lists (UPDATE, ON DUPLICATE KEY UPDATE, ON CONFLICT DO UPDATE), with the table they update. */
  readonly assignmentLists: readonly AssignmentList[];
  readonly comparisons: readonly Comparison[];
  /** Column defaults set by CREATE TABLE / ALTER TABLE: a literal the server stores in every new row. */
  readonly defaults: readonly ColumnDefault[];
  readonly astComparisons: readonly AstComparison[];
  /** Values bound to columns by the statement's structure rather than as one literal (see sql-bindings.ts). */
  readonly bindings: readonly SqlBinding[];
  /** Where the token reading disagreed with the parser (shapes, counts); empty when they agree. */
  readonly mismatches: readonly string[];
  /** Read on its tokens alone (plain-statements.ts), without the parser. */
  readonly plain: boolean;
}

export interface SqlScript {
  readonly sql: string;
  readonly dialect: SqlDialect;
  readonly positions: SourcePositions;
  readonly tokens: SqlTokens;
  readonly statements: readonly SqlStatement[];
  /** Every assignment in the script to each variable, by lower-cased name (sigil removed). */
  readonly variables: ReadonlyMap<string, readonly VariableAssignment[]>;
  /** Start offsets of INSERT VALUES items that are a bare name (BigQuery reads those as script variables). */
  readonly valuesNames: ReadonlySet<number>;
}

/**
 * How statements are read: 'auto' reads plain statements on their tokens and the rest with the
 * parser; 'parser' reads every statement with the parser (the reference the token path is tested against).
 */
export type SqlRoute = 'auto' | 'parser';

/** A test's observer of every script read on the 'auto' route (see observeSqlReads). */
let readObserver: ((sql: string, dialect: SqlDialect, limits: SqlLimits) => void) | undefined;

/**
 * Lets a test see every script the codec reads, so that the scripts of the other SQL tests can be
 * read again on both routes and compared (test/formats/sql/paths-agree.test.ts). Undefined stops it.
 */
export function observeSqlReads(observer: ((sql: string, dialect: SqlDialect, limits: SqlLimits) => void) | undefined): void {
  readObserver = observer;
}

/** A test's memo of reads (see memoSqlReads): each script, dialect and route read once. */
let readMemo: Map<string, { readonly limits: SqlLimits; readonly read: SqlScript | DpgError }> | undefined;

/**
 * Lets the SQL fuzz targets (test/fuzz/targets/sql.ts) read each generated script once per route:
 * the engine reads the same text again for Mask, Pseudonymise and Encrypt, and a read is a pure
 * function of its arguments whose result nothing changes. A refusal is remembered too. The test
 * empties the map between inputs; undefined stops it. The gateway never sets it.
 */
export function memoSqlReads(memo: Map<string, { readonly limits: SqlLimits; readonly read: SqlScript | DpgError }> | undefined): void {
  readMemo = memo;
}

/** Tokenizes, parses and lines the two up. Throws MALFORMED_DATA_SET / PAYLOAD_TOO_LARGE. */
export function readSqlScript(sql: string, dialect: SqlDialect, limits: SqlLimits = DEFAULT_SQL_LIMITS, route: SqlRoute = 'auto'): SqlScript {
  if (route === 'auto') readObserver?.(sql, dialect, limits);
  if (readMemo === undefined) return readScript(sql, dialect, limits, route);
  const key = `${route}\u0000${dialect.name}\u0000${sql}`;
  const memo = readMemo.get(key);
  if (memo !== undefined && memo.limits === limits) {
    if (memo.read instanceof DpgError) throw memo.read;
    return memo.read;
  }
  try {
    const read = readScript(sql, dialect, limits, route);
    readMemo.set(key, { limits, read });
    return read;
  } catch (err) {
    if (err instanceof DpgError) readMemo.set(key, { limits, read: err });
    throw err;
  }
}

function readScript(sql: string, dialect: SqlDialect, limits: SqlLimits, route: SqlRoute): SqlScript {
  if (sql.length > limits.maxLength) {
    throw new DpgError('PAYLOAD_TOO_LARGE', `SQL script is longer than ${limits.maxLength} characters`);
  }
  const positions = new SourcePositions(sql);
  const { tokens, hidden } = tokenizeSql(sql, dialect, positions, limits);
  checkStrings(sql, tokens, dialect, positions);
  const segments = splitStatements(tokens);
  if (segments.length > limits.maxStatements) {
    throw new DpgError('PAYLOAD_TOO_LARGE', `SQL script has more than ${limits.maxStatements} statements`);
  }
  // Statements the guard settles itself (SET NAMES, which the parser's grammars lack) are hidden
  // from the parser and stand in the list as bare `set` trees; plain statements (plain-statements.ts)
  // are hidden too and read on their tokens alone.
  const settled = guardScript(sql, dialect, tokens, segments, positions);
  const reader = new StatementReader(sql, dialect, tokens);
  // Plain statements are built as soon as they are recognised: what recognition noted dies young.
  const plain = new Map<number, SqlStatement>();
  // An empty statement (`;;`, a leading `;`) is the parser's to accept or refuse: the script is read as before.
  let semis = 0;
  for (let k = 0; k < tokens.length; k++) if (tokens.kinds[k] === SEMI) semis++;
  const emptyStatements = semis !== segments.filter((seg) => seg.semi !== -1).length;
  if (route === 'auto' && !emptyStatements) {
    segments.forEach((seg, k) => {
      if (settled.has(k)) return;
      const found = readPlainStatement(sql, dialect, tokens, seg.first, seg.end);
      if (found !== undefined) plain.set(k, reader.readPlain(seg, found));
    });
  }
  const hide = [...hidden];
  for (const k of [...settled, ...plain.keys()]) {
    const seg = segments[k];
    hide.push(tokens.starts[seg.first], seg.semi === -1 ? tokens.ends[seg.end - 1] : tokens.ends[seg.semi]);
  }
  const skipped = settled.size + plain.size;
  let parsed: SqlAst[] = [];
  if (segments.length !== skipped) {
    try {
      parsed = parseSqlStatements(parserText(sql, tokens.all(), hide, dialect), dialect, positions);
    } catch (err) {
      // The parser's reading of a statement can depend on its neighbours (T-SQL's grammar splits some
      // refused text differently by what follows it): any doubt, and the whole script is read as before.
      if (plain.size > 0 && err instanceof DpgError) return readSqlScript(sql, dialect, limits, 'parser');
      throw err;
    }
    if (plain.size > 0 && parsed.length + skipped !== segments.length) return readSqlScript(sql, dialect, limits, 'parser');
  }
  if (parsed.length + skipped !== segments.length) {
    throw new DpgError(
      'MALFORMED_DATA_SET',
      `SQL script could not be split into statements (${segments.length} found, the parser read ${parsed.length + skipped}); end every statement with ';'`,
    );
  }
  let p = 0;
  const statements = segments.map((seg, k) => plain.get(k) ?? reader.read(seg, settled.has(k) ? { type: 'set' } : (parsed[p++] ?? {})));
  const variables = new Map<string, VariableAssignment[]>();
  // A plain statement holds no variable (its values are literals, its names plain): nothing to read there.
  segments.forEach((seg, k) => {
    if (!plain.has(k)) reader.readVariableAssignments(seg, variables);
  });
  return { sql, dialect, positions, tokens, statements, variables, valuesNames: reader.valuesNames };
}

/**
 * Every string literal must decode with certainty (escapes.ts), and two string literals in a row are
 * refused: MySQL joins `'a' 'b'` into one value, PostgreSQL does across a line break (an E'…' string
 * keeps its escapes in the continued part), elsewhere the second is an alias. Either way the value the
 * server stores is not the one a literal-by-literal reading sees.
 */
function checkStrings(sql: string, tokens: SqlTokens, dialect: SqlDialect, positions: SourcePositions): void {
  const kinds = tokens.kinds;
  for (let k = 0; k < tokens.length; k++) {
    if (kinds[k] !== STRING) continue;
    try {
      decodeStringAt(tokens, k, dialect);
    } catch (err) {
      if (!(err instanceof EscapeError)) throw err;
      throw refusedAt(positions, tokens.contentStarts[k] + err.offset, `a string literal uses an escape that cannot be read with certainty (${err.reason})`);
    }
    if (k + 1 < tokens.length && kinds[k + 1] === STRING) {
      throw refusedAt(positions, tokens.starts[k + 1], 'two string literals in a row (servers join them into one value, or read the second as a name); write one literal');
    }
  }
}

function refusedAt(positions: SourcePositions, offset: number, what: string): DpgError {
  return new DpgError('MALFORMED_DATA_SET', `SQL at ${positions.describe(offset)}: ${what}`);
}

/**
 * The text handed to node-sql-parser, same length as the script so positions hold. The parser must
 * read the statements the lexer read, so what the dialect's server reads as a comment is blanked
 * (the parser's own comment rules differ: it takes MySQL's `--'x'` for a comment), as are the
 * markers of executable comments, whose text is SQL. A `--` that is two minus signs (MySQL) becomes
 * `-+`, which has the same shape for the parser. And its grammars read a backslash as an escape in
 * every dialect, though in PostgreSQL, T-SQL and SQLite '\' is a complete string: such
 * backslashes are swapped for '_' and the cross-check keys do the same.
 */
function parserText(sql: string, tokens: readonly SqlToken[], hidden: readonly number[], dialect: SqlDialect): string {
  const edits: [number, number, string][] = [];
  // Hidden ranges can overlap (a settled statement holds an executable comment's markers): merge them.
  const ranges: [number, number][] = [];
  for (let k = 0; k < hidden.length; k += 2) ranges.push([hidden[k], hidden[k + 1]]);
  ranges.sort((x, y) => x[0] - y[0]);
  const merged: [number, number][] = [];
  for (const [start, end] of ranges) {
    const top = merged[merged.length - 1];
    if (top !== undefined && start <= top[1]) top[1] = Math.max(top[1], end);
    else merged.push([start, end]);
  }
  for (const [start, end] of merged) edits.push([start, end, blank(sql, start, end)]);
  for (let k = 1; k < tokens.length; k++) {
    const a = tokens[k - 1];
    const b = tokens[k];
    if (a.kind === 'op' && b.kind === 'op' && a.text === '-' && b.text === '-' && a.end === b.start) edits.push([b.start, b.end, '+']);
  }
  // The parser has no U&'…': it reads the same string without the prefix (its backslashes swapped below).
  for (const t of tokens) if (t.kind === 'string' && t.prefix === 'U&') edits.push([t.start, t.contentStart - 1, '  ']);
  if (!dialect.backslashEscapes) {
    for (const t of tokens) {
      if (t.kind !== 'string' || !plainBackslashes(t, dialect)) continue;
      const content = sql.slice(t.contentStart, t.contentEnd);
      if (content.includes('\\')) edits.push([t.contentStart, t.contentEnd, content.replaceAll('\\', '_')]);
    }
  }
  if (edits.length === 0) return sql;
  edits.sort((x, y) => x[0] - y[0]);
  let out = '';
  let cursor = 0;
  for (const [start, end, text] of edits) {
    if (start < cursor) continue; // inside a hidden range already blanked
    out += sql.slice(cursor, start) + text;
    cursor = end;
  }
  return out + sql.slice(cursor);
}

/** Spaces in place of [start, end), line breaks kept so the parser's line numbers stay right. */
function blank(sql: string, start: number, end: number): string {
  return sql.slice(start, end).replace(/[^\n]/g, ' ');
}

/** A backslash in this string token is an ordinary character. */
function plainBackslashes(t: SqlToken, dialect: SqlDialect): boolean {
  return !dialect.backslashEscapes && t.prefix !== 'E' && t.prefix !== '$';
}

interface Segment {
  readonly first: number;
  readonly end: number;
  /** Index of the terminating `;`, or -1. */
  readonly semi: number;
}

function splitStatements(tokens: SqlTokens): Segment[] {
  const segments: Segment[] = [];
  let first = 0;
  for (let i = 0; i <= tokens.length; i++) {
    if (i === tokens.length || tokens.kinds[i] === SEMI) {
      if (i > first) segments.push({ first, end: i, semi: i < tokens.length ? i : -1 });
      first = i + 1;
    }
  }
  return segments;
}

/** Each token's parenthesis depth, and the index of the parenthesis matching each one (-1 for none). */
function nestingOf(tokens: SqlTokens): { depth: Int32Array; match: Int32Array } {
  const depth = new Int32Array(tokens.length);
  const match = new Int32Array(tokens.length).fill(-1);
  const stack: number[] = [];
  let d = 0;
  for (let i = 0; i < tokens.length; i++) {
    const kind = tokens.kinds[i];
    if (kind === CLOSE) {
      d--;
      const open = stack.pop();
      if (open !== undefined) {
        match[open] = i;
        match[i] = open;
      }
    }
    depth[i] = d;
    if (kind === OPEN) {
      d++;
      stack.push(i);
    }
  }
  return { depth, match };
}

/** The empty list, shared by the statements that lack a part. */
const NONE: readonly never[] = Object.freeze([]);
const COMPARISON_OPS = new Set(['=', '==', '!=', '<>', '<', '>', '<=', '>=', '<=>']);
const WORD_OPS = new Set(['LIKE', 'ILIKE', 'IN', 'BETWEEN']);
/** Tokens that bind tighter than a comparison: a column or literal next to one is part of a larger operand. */
const TIGHTER_OPS = new Set(['+', '-', '*', '/', '%', '||', '&', '|', '^', '~', '<<', '>>', '->', '->>', '#>', '#>>', '::', '!']);
const TYPED_LITERAL_WORDS = new Set(['DATE', 'TIME', 'TIMESTAMP', 'DATETIME']);
/** Words that are never column names in a comparison. */
const NOT_COLUMNS = new Set(['NULL', 'TRUE', 'FALSE', 'END', 'THEN', 'ELSE', 'CURRENT_DATE', 'CURRENT_TIME', 'CURRENT_TIMESTAMP', 'ALL', 'ANY', 'SOME', 'EXISTS']);
const ASSIGNMENT_LIST_END = new Set(['WHERE', 'FROM', 'RETURNING', 'OUTPUT', 'ORDER', 'LIMIT', 'OPTION']);
/** Words that end a column default's value inside its definition. */
const DEFAULT_END = new Set(['NOT', 'NULL', 'PRIMARY', 'UNIQUE', 'CHECK', 'REFERENCES', 'COLLATE', 'CONSTRAINT', 'AUTO_INCREMENT', 'COMMENT', 'GENERATED', 'FIRST', 'AFTER', 'FOR', 'ON', 'WITH', 'IDENTITY', 'KEY']);
const SELECT_LIST_END = new Set(['FROM', 'WHERE', 'GROUP', 'HAVING', 'ORDER', 'LIMIT', 'UNION', 'EXCEPT', 'INTERSECT', 'ON', 'RETURNING', 'WINDOW', 'QUALIFY']);

/**
 * Reads statements of one script. Statements the parser read are read on token objects, with the
 * per-token depth and bracket matching; all three are made on the first such statement, so a
 * script of plain statements (read on the token arrays alone) never makes them.
 */
class StatementReader {
  readonly valuesNames = new Set<number>();
  /** readPlain's tables, by name as written. */
  private readonly plainTables = new Map<string, { tables: ReadonlyMap<string, string>; reads: readonly string[] }>();
  private objects: readonly SqlToken[] | undefined;
  private nesting: { depth: Int32Array; match: Int32Array } | undefined;

  constructor(
    private readonly sql: string,
    private readonly dialect: SqlDialect,
    private readonly table: SqlTokens,
  ) {}

  private get tokens(): readonly SqlToken[] {
    return (this.objects ??= this.table.all());
  }

  private get depth(): Int32Array {
    return (this.nesting ??= nestingOf(this.table)).depth;
  }

  private get match(): Int32Array {
    return (this.nesting ??= nestingOf(this.table)).match;
  }

  /** Reads a statement with what the parser's tree says about it, or (plain statements) what its tokens say. */
  read(seg: Segment, source: SqlAst | PlainStatement): SqlStatement {
    const facts = isPlain(source) ? plainFacts(source) : treeFacts(source, this.dialect);
    const ast = facts.ast;
    const type = facts.type;
    const tables = facts.tables;
    const distinct = new Set(tables.values());
    const defaultTable = distinct.size === 1 ? [...distinct][0] : undefined;
    const mismatches: string[] = [];
    const assignmentLists: AssignmentList[] = [];
    const assignmentEquals = new Set<number>();
    let insert: InsertShape | undefined;
    let insertWithoutColumns = false;

    if (type === 'insert' || type === 'replace') {
      const table = facts.insertTable ?? defaultTable ?? '';
      const shape = this.readInsert(seg, table, ast, mismatches);
      insert = shape;
      if (shape.columns.length === 0 && shape.rows.some((row) => row.some((item) => item.literal !== undefined || item.inner.length > 0))) {
        insertWithoutColumns = true;
      }
      const dup = this.findSequence(seg, ['ON', 'DUPLICATE', 'KEY', 'UPDATE']);
      if (dup !== -1) assignmentLists.push({ table, items: this.readAssignments(dup, seg, assignmentEquals), clauseStart: this.tokens[dup - 4].start, emptyClause: '' });
      const conflict = this.findSequence(seg, ['DO', 'UPDATE', 'SET']);
      if (conflict !== -1) assignmentLists.push({ table, items: this.readAssignments(conflict, seg, assignmentEquals), clauseStart: this.tokens[conflict - 3].start, emptyClause: 'DO NOTHING' });
      if (ast !== undefined) {
        const astLists = [astSetList(record(ast.on_duplicate_update)?.set), astSetList(record(record(record(ast.conflict)?.action)?.expr)?.set)];
        const expected = astLists.filter((l) => l !== undefined).map((l) => l!.length);
        const found = assignmentLists.map((l) => l.items.length);
        if (expected.join() !== found.join()) mismatches.push('ON DUPLICATE KEY / ON CONFLICT assignments');
      }
    } else if (type === 'update') {
      const set = this.findSequence(seg, ['SET']);
      const items = set === -1 ? [] : this.readAssignments(set, seg, assignmentEquals);
      assignmentLists.push({ table: defaultTable, items, clauseStart: undefined, emptyClause: '' });
      const astItems = ast === undefined ? facts.setColumns : (astSetList(ast.set) ?? []);
      if (astItems.length !== items.length) mismatches.push('SET assignments');
      else {
        for (let k = 0; k < items.length; k++) {
          const astName = columnNameOf(astItems[k]);
          if (astName !== undefined && astName.toLowerCase() !== items[k].column.name.toLowerCase()) mismatches.push('SET assignments');
        }
      }
    }

    const comparisons = this.readComparisons(seg, assignmentEquals);

    const start = this.tokens[seg.first].start;
    const end = seg.semi === -1 ? this.tokens[seg.end - 1].end : this.tokens[seg.semi].end;
    const writesTable = (insert?.table ?? facts.createdTable)?.toLowerCase();
    const defaults = this.isWord(seg.first, 'CREATE') || this.isWord(seg.first, 'ALTER') ? this.readDefaults(seg) : [];
    const { readTables, astComparisons, bindings } = facts;
    const plain = ast === undefined;
    return { type, start, end, tables, defaultTable, readTables, writesTable, defaults, insert, insertWithoutColumns, assignmentLists, comparisons, astComparisons, bindings, mismatches, plain };
  }

  /**
   * A plain statement (plain-statements.ts) from the places its recognition found: the same
   * statement `read` builds for it (test/formats/sql/paths-agree.test.ts compares the two), without
   * walking its tokens again. Its SET list and comparisons are the only ones it holds; it has no
   * clause lists, defaults or variables.
   */
  readPlain(seg: Segment, plain: PlainStatement): SqlStatement {
    const table = plain.table;
    // Statements on one table share its map and list (nothing changes them once read).
    let named = this.plainTables.get(table);
    if (named === undefined) {
      named = { tables: new Map([[table.toLowerCase(), table]]), reads: [table.toLowerCase()] };
      this.plainTables.set(table, named);
    }
    let insert: InsertShape | undefined;
    let assignmentLists: readonly AssignmentList[] = NONE;
    let bindings: readonly SqlBinding[] = NONE;
    if (plain.type === 'insert') {
      const columns = plain.columns.map((c) => this.plainColumn(c, c + 1));
      const rows: ValueItem[][] = [];
      const values = plain.values;
      const width = 2 * columns.length;
      for (let r = 0; r < values.length; r += width) {
        const items: ValueItem[] = [];
        for (let v = r; v < r + width; v += 2) items.push(this.plainItem(values[v], values[v + 1]));
        rows.push(items);
      }
      insert = { table, columns, rows };
    } else if (plain.type === 'update') {
      const items: Assignment[] = [];
      const at = plain.assignments;
      for (let v = 0; v < at.length; v += 3) {
        const column = at[v];
        items.push({ column: this.plainColumn(column, column + 1), item: this.plainItem(at[v + 1], at[v + 2]), start: this.table.starts[column], end: this.table.ends[at[v + 2] - 1] });
      }
      assignmentLists = [{ table, items, clauseStart: undefined, emptyClause: '' }];
      // What the tree's SET list gives (plainFacts): a binding per target that reads no other column.
      bindings = plain.setColumns.map((column) => ({ columns: [column], qualifier: undefined, literal: false, reads: NONE, construct: 'a SET list', copies: true }));
    } else if (plain.type === 'select') {
      bindings = plain.outputs.map((column) => ({ columns: [column], qualifier: undefined, literal: false, reads: [column.toLowerCase()], construct: 'a SELECT list', copies: true }));
    }
    const comparisons: Comparison[] = plain.conditions.map((c) => {
      const slots: LiteralSlot[] = [];
      for (let v = 0; v < c.literals.length; v += 2) slots.push(this.plainSlot(c.literals[v], c.literals[v + 1]));
      return { column: this.plainColumn(c.columnFirst, c.columnEnd), operator: c.operator, slots, variables: NONE };
    });
    const reads = plain.type === 'select' || plain.type === 'delete';
    return {
      type: plain.type,
      start: this.table.starts[seg.first],
      end: seg.semi === -1 ? this.table.ends[seg.end - 1] : this.table.ends[seg.semi],
      tables: named.tables,
      defaultTable: table,
      readTables: reads ? named.reads : NONE,
      writesTable: insert === undefined ? undefined : named.reads[0],
      defaults: NONE,
      insert,
      insertWithoutColumns: false,
      assignmentLists,
      comparisons,
      astComparisons: NONE,
      bindings,
      mismatches: NONE,
      plain: true,
    };
  }

  /** A plain value (plain-statements.ts): one literal over tokens [a, b), as valueItem reads it. */
  private plainItem(a: number, b: number): ValueItem {
    return { start: this.table.starts[a], end: this.table.ends[b - 1], literal: this.plainSlot(a, b), inner: NONE, variables: NONE };
  }

  /**
   * A plain literal over tokens [a, b) — a string, number, NULL, TRUE, FALSE, or `-` and a number — as
   * literalAt reads it.
   */
  private plainSlot(a: number, b: number): LiteralSlot {
    const table = this.table;
    if (b - a === 2) return { start: table.starts[a], end: table.ends[a + 1], token: a + 1, kind: 'number', negative: table.text(a) === '-' };
    const t = table.kinds[a];
    const kind: LiteralKind = t === STRING ? 'string' : t === NUMBER ? 'number' : table.text(a) === 'NULL' ? 'null' : 'bool';
    return { start: table.starts[a], end: table.ends[a], token: a, kind, negative: false };
  }

  /** columnName for a plain statement's name or qualified name [a, b) (word or quoted name tokens), on the token arrays. */
  private plainColumn(a: number, b: number): ColumnName {
    const table = this.table;
    const nameOf = (k: number): string => (table.kinds[k] === IDENT ? table.text(k) : table.written(k));
    return { name: nameOf(b - 1), qualifier: b - 3 >= a && table.kinds[b - 2] === DOT ? nameOf(b - 3) : undefined, start: table.starts[a], end: table.ends[b - 1] };
  }

  private isWord(i: number, word: string): boolean {
    const t = this.tokens[i];
    return t !== undefined && t.kind === 'word' && t.text === word;
  }

  /** First occurrence of the keyword sequence at the statement's own depth; returns the index after it. */
  private findSequence(seg: Segment, words: readonly string[]): number {
    const base = this.depth[seg.first];
    outer: for (let i = seg.first; i + words.length <= seg.end; i++) {
      if (this.depth[i] !== base) continue;
      for (let k = 0; k < words.length; k++) if (!this.isWord(i + k, words[k])) continue outer;
      return i + words.length;
    }
    return -1;
  }

  /** Splits tokens [from, to) at commas of depth `base`; returns [first, end) ranges. */
  private splitList(from: number, to: number, base: number): [number, number][] {
    const parts: [number, number][] = [];
    let first = from;
    for (let i = from; i < to; i++) {
      if (this.tokens[i].kind === 'comma' && this.depth[i] === base) {
        parts.push([first, i]);
        first = i + 1;
      }
    }
    if (to > first || parts.length > 0) parts.push([first, to]);
    return parts;
  }

  private readInsert(seg: Segment, table: string, ast: SqlAst | undefined, mismatches: string[]): InsertShape {
    const base = this.depth[seg.first];
    let columns: ColumnName[] = [];
    let i = seg.first + 1;
    for (; i < seg.end; i++) {
      const t = this.tokens[i];
      if (this.depth[i] !== base) continue;
      if (t.kind === 'word' && (t.text === 'VALUES' || t.text === 'VALUE' || t.text === 'SELECT' || t.text === 'SET' || t.text === 'DEFAULT' || t.text === 'WITH')) break;
      if (t.kind === 'open') {
        const close = this.match[i];
        if (close === -1 || this.isWord(i + 1, 'SELECT') || this.isWord(i + 1, 'WITH')) break;
        columns = this.splitList(i + 1, close, base + 1).map(([a, b]) => this.columnName(a, b));
        i = close + 1;
        break;
      }
    }
    const rows: ValueItem[][] = [];
    for (; i < seg.end; i++) {
      if (this.depth[i] !== base) continue;
      // INSERT … (SELECT …) and INSERT … ((WITH … SELECT …)): the query sits in parentheses.
      if (this.tokens[i].kind === 'open') {
        let q = i;
        while (this.tokens[q]?.kind === 'open') q++;
        if (!this.isWord(q, 'SELECT') && !this.isWord(q, 'WITH')) continue;
        while (q < seg.end && !(this.isWord(q, 'SELECT') && this.depth[q] === this.depth[i + (q - i) - 1] + 1)) q++;
        if (q >= seg.end) break;
        i = q;
      }
      if (this.isWord(i, 'VALUES') || this.isWord(i, 'VALUE')) {
        let j = i + 1;
        while (j < seg.end && this.tokens[j].kind === 'open' && this.match[j] !== -1) {
          const close = this.match[j];
          rows.push(
            this.splitList(j + 1, close, base + 1).map(([a, b]) => {
              if (b - a === 1 && !this.isWord(a, 'DEFAULT') && this.columnAt(a, b) !== undefined) this.valuesNames.add(this.tokens[a].start);
              return this.valueItem(a, b);
            }),
          );
          if (this.tokens[close + 1]?.kind === 'comma' && this.tokens[close + 2]?.kind === 'open') j = close + 2;
          else break;
        }
        break;
      }
      if (this.isWord(i, 'SELECT')) {
        // INSERT … SELECT: each SELECT list (UNION arms included) is one row bound to the column list.
        for (let s = i; s < seg.end; s++) {
          if (!this.isWord(s, 'SELECT') || this.depth[s] !== this.depth[i]) continue;
          let from = s + 1;
          while (this.isWord(from, 'DISTINCT') || this.isWord(from, 'ALL')) from++;
          let to = from;
          const listDepth = this.depth[s];
          while (to < seg.end && this.depth[to] >= listDepth && !(this.depth[to] === listDepth && this.tokens[to].kind === 'word' && SELECT_LIST_END.has(this.tokens[to].text))) to++;
          rows.push(this.splitList(from, to, listDepth).map(([a, b]) => this.selectItem(a, b)));
        }
        break;
      }
    }
    if (ast !== undefined) this.checkInsert(ast, columns, rows, mismatches);
    return { table, columns, rows };
  }

  private checkInsert(ast: SqlAst, columns: readonly ColumnName[], rows: readonly (readonly ValueItem[])[], mismatches: string[]): void {
    const astColumns = Array.isArray(ast.columns) ? ast.columns : [];
    if (astColumns.length !== columns.length) {
      mismatches.push('INSERT column list');
      return;
    }
    for (let k = 0; k < columns.length; k++) {
      const name = columnNameOf(astColumns[k]);
      if (name !== undefined && name.toLowerCase() !== columns[k].name.toLowerCase()) mismatches.push('INSERT column list');
    }
    const values = record(ast.values);
    if (values?.type === 'values' && Array.isArray(values.values)) {
      const astRows = values.values as unknown[];
      if (astRows.length !== rows.length) {
        mismatches.push('INSERT rows');
        return;
      }
      for (let r = 0; r < rows.length; r++) {
        const astItems = record(astRows[r])?.value;
        if (!Array.isArray(astItems) || astItems.length !== rows[r].length) {
          mismatches.push('INSERT rows');
          return;
        }
        for (let k = 0; k < astItems.length; k++) {
          const slot = rows[r][k].literal;
          const astKey = astLiteralKey(astItems[k], this.dialect);
          if (slot !== undefined && astKey !== undefined && astKey !== this.slotKey(slot)) mismatches.push('INSERT values');
        }
      }
    } else {
      if (rows.some((row) => row.length !== columns.length) && columns.length > 0) mismatches.push('INSERT … SELECT list');
      // Every arm of the query (UNION, EXCEPT, INTERSECT) must be one the token reading bound.
      let arms = 0;
      for (let arm = values?.type === 'select' ? values : undefined; arm !== undefined && arms <= rows.length; arm = record(arm._next)) arms++;
      if (values?.type === 'select' && arms !== rows.length) mismatches.push('INSERT … SELECT arms');
    }
  }

  private readAssignments(from: number, seg: Segment, equals: Set<number>): Assignment[] {
    const base = this.depth[from] ?? 0;
    let to = from;
    while (to < seg.end && !(this.depth[to] === base && this.tokens[to].kind === 'word' && ASSIGNMENT_LIST_END.has(this.tokens[to].text))) {
      if (this.depth[to] < base) break;
      to++;
    }
    const items: Assignment[] = [];
    for (const [a, b] of this.splitList(from, to, base)) {
      let eq = a;
      while (eq < b && !(this.tokens[eq].kind === 'op' && this.tokens[eq].text === '=' && this.depth[eq] === base)) eq++;
      if (eq >= b) continue;
      equals.add(eq);
      items.push({ column: this.columnName(a, eq), item: this.valueItem(eq + 1, b), start: this.tokens[a].start, end: this.tokens[b - 1].end });
    }
    return items;
  }

  /**
   * Every `DEFAULT <value>` of a CREATE or ALTER statement, with the column it is for: T-SQL's
   * `DEFAULT … FOR col`; else the column whose definition holds it — the first name after the
   * `(` or `,` that opens the definition, or after ADD / ALTER / MODIFY [COLUMN] (CHANGE: the new name).
   */
  private readDefaults(seg: Segment): ColumnDefault[] {
    const found: ColumnDefault[] = [];
    const SKIP = new Set(['ADD', 'ALTER', 'MODIFY', 'COLUMN', 'IF', 'NOT', 'EXISTS']);
    for (let k = seg.first; k < seg.end; k++) {
      if (!this.isWord(k, 'DEFAULT')) continue;
      const d = this.depth[k];
      // The value runs to the next comma or constraint keyword of its definition (`NOT NULL`, `FOR col`, …).
      let end = k + 2;
      if (!this.isWord(k + 1, 'NULL')) {
        end = k + 1;
        while (end < seg.end && this.depth[end] >= d && !(this.depth[end] === d && (this.tokens[end].kind === 'comma' || (this.tokens[end].kind === 'word' && DEFAULT_END.has(this.tokens[end].text))))) end++;
      }
      if (end <= k + 1 || end > seg.end) continue;
      const item = this.valueItem(k + 1, end);
      let column: ColumnName | undefined;
      if (this.isWord(end, 'FOR')) {
        const named = this.columnStartingAt(end + 1, seg.end);
        column = named?.[0];
      } else {
        let a = k - 1;
        while (a > seg.first && !(this.depth[a] === d && this.tokens[a].kind === 'comma') && !(this.tokens[a].kind === 'open' && this.depth[a] === d - 1)) {
          if (this.depth[a] === d && this.tokens[a].kind === 'word' && (this.tokens[a].text === 'ADD' || this.tokens[a].text === 'ALTER' || this.tokens[a].text === 'MODIFY' || this.tokens[a].text === 'CHANGE') && !this.isWord(a + 1, 'TABLE')) break;
          a--;
        }
        let b = a + 1;
        const change = this.isWord(a, 'CHANGE');
        while (b < k && this.tokens[b].kind === 'word' && SKIP.has(this.tokens[b].text)) b++;
        if (change) b++;
        if (b < k && (this.tokens[b].kind === 'word' || this.tokens[b].kind === 'ident')) column = this.columnName(b, b + 1);
      }
      if (column !== undefined) found.push({ column, item });
      k = end - 1;
    }
    return found;
  }

  /** A (possibly qualified) column name from tokens [a, b): the last part is the column. */
  private columnName(a: number, b: number): ColumnName {
    const last = this.tokens[b - 1];
    const before = b - 3 >= a && this.tokens[b - 2].kind === 'dot' ? this.tokens[b - 3] : undefined;
    return {
      name: this.identText(last),
      qualifier: before === undefined ? undefined : this.identText(before),
      start: this.tokens[a].start,
      end: last.end,
    };
  }

  private identText(t: SqlToken): string {
    if (t.kind === 'ident') return t.text;
    if (t.kind === 'string') return this.sql.slice(t.contentStart, t.contentEnd);
    return this.sql.slice(t.start, t.end);
  }

  /** The literal starting at token i, if one does (sign and typed-literal keyword included); returns [slot, next index]. */
  private literalAt(i: number, to: number): [LiteralSlot, number] | undefined {
    const t = this.tokens[i];
    if (t === undefined || i >= to) return undefined;
    if (t.kind === 'string') return [{ start: t.start, end: t.end, token: i, kind: 'string', negative: false }, i + 1];
    if (t.kind === 'number') return [{ start: t.start, end: t.end, token: i, kind: 'number', negative: false }, i + 1];
    if (this.mayBeString(t)) return [{ start: t.start, end: t.end, token: i, kind: 'name', negative: false }, i + 1];
    if (t.kind === 'op' && (t.text === '-' || t.text === '+') && this.tokens[i + 1]?.kind === 'number' && i + 1 < to) {
      const num = this.tokens[i + 1];
      return [{ start: t.start, end: num.end, token: i + 1, kind: 'number', negative: t.text === '-' }, i + 2];
    }
    if (t.kind === 'word') {
      if (t.text === 'NULL') return [{ start: t.start, end: t.end, token: i, kind: 'null', negative: false }, i + 1];
      if (t.text === 'TRUE' || t.text === 'FALSE') return [{ start: t.start, end: t.end, token: i, kind: 'bool', negative: false }, i + 1];
      const next = this.tokens[i + 1];
      if (TYPED_LITERAL_WORDS.has(t.text) && next?.kind === 'string' && i + 1 < to) {
        return [{ start: next.start, end: next.end, token: i + 1, kind: 'string', negative: false }, i + 2];
      }
    }
    return undefined;
  }

  private valueItem(a: number, b: number, valueEnd = b): ValueItem {
    const start = a < b ? this.tokens[a].start : 0;
    const end = a < b ? this.tokens[b - 1].end : 0;
    const single = this.literalAt(a, valueEnd);
    if (single !== undefined && single[1] === valueEnd) return { start, end, literal: single[0], inner: [], variables: [] };
    const inner: LiteralSlot[] = [];
    const variables: string[] = [];
    for (let i = a; i < b; i++) {
      const t = this.tokens[i];
      if (t.kind === 'string' || t.kind === 'number') inner.push({ start: t.start, end: t.end, token: i, kind: t.kind, negative: false });
      else if (this.mayBeString(t)) inner.push({ start: t.start, end: t.end, token: i, kind: 'name', negative: false });
      else {
        const name = this.variableName(i);
        if (name !== undefined) variables.push(name);
      }
    }
    return { start, end, literal: undefined, inner, variables };
  }

  /**
   * The variable token i reads, lower-cased without its sigil: `@n` in MySQL, MariaDB and T-SQL (not
   * `@@system` ones), `$n` in Snowflake. Undefined for anything else.
   */
  variableName(i: number): string | undefined {
    const t = this.tokens[i];
    if (t === undefined || t.kind !== 'param') return undefined;
    if (t.text.startsWith('@') && !t.text.startsWith('@@') && t.text.length > 1) return t.text.slice(1).toLowerCase();
    if (this.dialect.name === 'snowflake' && /^\$[A-Za-z_]/.test(t.text)) return t.text.slice(1).toLowerCase();
    return undefined;
  }

  /**
   * Adds the statement's assignments to script variables. Forms: MySQL `SET @a = …, @b := …` and
   * `@a := …` anywhere; T-SQL `DECLARE @a T = …, …`, `SET @a = …`, `SELECT @a = …, …`; Snowflake
   * `SET a = …` and `SET (a, b) = (…, …)`; and variables filled by a query: `INTO @a, @b` (MySQL
   * SELECT, T-SQL FETCH) and T-SQL `EXEC @a = …`.
   */
  readVariableAssignments(seg: Segment, out: Map<string, VariableAssignment[]>): void {
    const add = (name: string, assignment: VariableAssignment): void => {
      const list = out.get(name);
      if (list === undefined) out.set(name, [assignment]);
      else list.push(assignment);
    };
    const base = this.depth[seg.first];
    const head = this.tokens[seg.first];
    const headWord = head.kind === 'word' ? head.text : '';
    let hasLiteral = false;
    for (let i = seg.first; i < seg.end; i++) if (this.tokens[i].kind === 'string' || this.tokens[i].kind === 'number') hasLiteral = true;
    /** Token i is a variable in an `INTO @a, @b` list (filled, not read). */
    const inInto = (i: number): boolean => {
      let k = i - 1;
      while (k > seg.first && this.tokens[k].kind === 'comma' && this.variableName(k - 1) !== undefined) k -= 2;
      return this.isWord(k, 'INTO');
    };
    // A variable filled by a query holds what the query reads: a literal in it, another variable, or
    // (FETCH) a cursor declared elsewhere. Any of these makes its value one that cannot be protected here.
    let readsVariable = false;
    /** Token i is the variable an assignment sets (`@n :=`, or `@n =` opening an item of a SET, SELECT or DECLARE list). */
    const isTarget = (i: number): boolean => {
      const next = this.tokens[i + 1];
      if (next?.kind === 'op' && next.text === ':=') return true;
      const prev = this.tokens[i - 1];
      const opensItem = prev !== undefined && this.depth[i] === base && (prev.kind === 'comma' || (prev.kind === 'word' && (prev.text === 'SET' || prev.text === 'SELECT' || prev.text === 'DECLARE')));
      return opensItem && next?.kind === 'op' && next.text === '=';
    };
    for (let i = seg.first; i < seg.end; i++) if (this.variableName(i) !== undefined && !inInto(i) && !isTarget(i)) readsVariable = true;
    const fetch = this.isWord(seg.first, 'FETCH');
    const filled = (i: number): void => {
      const name = this.variableName(i)!;
      add(name, { item: undefined, statementHasLiteral: hasLiteral || readsVariable || fetch, start: this.tokens[i].start });
    };
    /**
     * An assignment of `item`. Inside a query (`SELECT @n := x FROM …`, T-SQL `SELECT @n = x FROM …`)
     * anything but a single literal is a value the query reads — filled, as by INTO.
     */
    const assigned = (i: number, item: ValueItem): void => {
      if (item.literal === undefined && headWord !== 'SET' && headWord !== 'DECLARE') filled(i);
      else add(this.variableName(i)!, { item, statementHasLiteral: hasLiteral, start: this.tokens[i].start });
    };
    /** The value after the operator at `op`: up to the next comma or clause keyword at its depth. */
    const valueAfter = (op: number): ValueItem => {
      const depth = this.depth[op];
      let to = op + 1;
      while (to < seg.end && this.depth[to] >= depth && !(this.depth[to] === depth && (this.tokens[to].kind === 'comma' || (this.tokens[to].kind === 'word' && SELECT_LIST_END.has(this.tokens[to].text))))) to++;
      return this.valueItem(op + 1, to);
    };
    const isAssign = (k: number): boolean => {
      const t = this.tokens[k];
      // `+=`, `||=` and the like read as an operator followed by `=`: an assignment all the same.
      return t !== undefined && t.kind === 'op' && (t.text === '=' || t.text === ':=');
    };
    for (let i = seg.first; i < seg.end; i++) {
      const name = this.variableName(i);
      if (name === undefined) continue;
      const prev = this.tokens[i - 1];
      const next = this.tokens[i + 1];
      if (inInto(i)) {
        filled(i);
        continue;
      }
      if (this.isWord(i - 1, 'EXEC') || this.isWord(i - 1, 'EXECUTE')) {
        if (isAssign(i + 1)) filled(i);
        continue;
      }
      if (next?.kind === 'op' && next.text === ':=') {
        assigned(i, valueAfter(i + 1));
        continue;
      }
      const compound = next?.kind === 'op' && next.text !== '=' && isAssign(i + 2) && next.end === this.tokens[i + 2].start;
      const atListStart = prev !== undefined && (prev.kind === 'comma' || (prev.kind === 'word' && (prev.text === 'SET' || prev.text === 'SELECT' || prev.text === 'DECLARE'))) && this.depth[i] === base;
      if (!atListStart || (headWord !== 'SET' && headWord !== 'SELECT' && headWord !== 'DECLARE')) continue;
      if (headWord === 'SELECT' && this.dialect.name !== 'transactsql') continue; // `SELECT @a = 1` compares in MySQL
      if (compound) {
        // SET @n += 'x': the value depends on the earlier one and the literal: no single literal holds it.
        add(name, { item: undefined, statementHasLiteral: true, start: this.tokens[i].start });
        continue;
      }
      let eq = i + 1;
      if (headWord === 'DECLARE') {
        // DECLARE @n NVARCHAR(50) = N'…': the type sits between the name and `=`.
        while (eq < seg.end && !(this.depth[eq] === base && (isAssign(eq) || this.tokens[eq].kind === 'comma'))) eq++;
        if (!isAssign(eq)) continue;
      }
      if (isAssign(eq)) assigned(i, valueAfter(eq));
    }
    // Snowflake: SET a = …, SET (a, b) = (…, …)
    if (this.dialect.name === 'snowflake' && headWord === 'SET') {
      const first = seg.first + 1;
      const t = this.tokens[first];
      if (t?.kind === 'word' && isAssign(first + 1)) {
        add(t.text.toLowerCase(), { item: valueAfter(first + 1), statementHasLiteral: hasLiteral, start: t.start });
      } else if (t?.kind === 'open' && this.match[first] !== -1) {
        // Positions of a name list and a value list: each name gets the value at its position.
        const close = this.match[first];
        const names = this.splitList(first + 1, close, base + 1);
        const valuesOpen = close + 2;
        const values = isAssign(close + 1) && this.tokens[valuesOpen]?.kind === 'open' && this.match[valuesOpen] !== -1 ? this.splitList(valuesOpen + 1, this.match[valuesOpen], base + 1) : [];
        names.forEach(([a], n) => {
          const value = values[n];
          const item = value === undefined || values.length !== names.length ? undefined : this.valueItem(value[0], value[1]);
          add(this.tokens[a].text.toLowerCase(), { item, statementHasLiteral: true, start: this.tokens[a].start });
        });
      }
    }
  }

  /** A `"…"` name the server may read as a string (SQLite without such a column; T-SQL with QUOTED_IDENTIFIER OFF). */
  private mayBeString(t: SqlToken): boolean {
    return t.kind === 'ident' && t.quote === '"' && this.dialect.doubleQuotedNameMayBeString;
  }

  /** An INSERT … SELECT list item: a value, possibly followed by `[AS] alias` (kept in the item's span). */
  private selectItem(a: number, b: number): ValueItem {
    const last = this.tokens[b - 1];
    if (b - a >= 2 && (last.kind === 'ident' || last.kind === 'word')) {
      const valueEnd = this.isWord(b - 2, 'AS') ? b - 2 : b - 1;
      const single = this.literalAt(a, valueEnd);
      if (single !== undefined && single[1] === valueEnd) return this.valueItem(a, b, valueEnd);
    }
    return this.valueItem(a, b);
  }

  /** Tokens [a, b) form a column reference: name or qualified.name. */
  private columnAt(a: number, b: number): ColumnName | undefined {
    if (b - a !== 1 && b - a !== 3 && b - a !== 5) return undefined;
    for (let i = a; i < b; i++) {
      const t = this.tokens[i];
      const wantName = (i - a) % 2 === 0;
      if (wantName ? !(t.kind === 'ident' || (t.kind === 'word' && !NOT_COLUMNS.has(t.text))) : t.kind !== 'dot') return undefined;
    }
    return this.columnName(a, b);
  }

  /** Start index of the column reference ending just before `end` (exclusive), if one does. */
  private columnEndingAt(end: number, floor: number): [ColumnName, number] | undefined {
    let a = end - 1;
    if (a < floor) return undefined;
    while (a - 2 >= floor && this.tokens[a - 1].kind === 'dot') a -= 2;
    const column = this.columnAt(a, end);
    if (column === undefined) return undefined;
    if (this.tightAt(a - 1)) return undefined;
    return [column, a];
  }

  /** The column reference starting at `i`, if one does; returns it and the index after it. */
  private columnStartingAt(i: number, to: number): [ColumnName, number] | undefined {
    let b = i + 1;
    while (b + 1 < to && this.tokens[b].kind === 'dot') b += 2;
    if (b > to) return undefined;
    const column = this.columnAt(i, b);
    if (column === undefined || this.tightAt(b) || this.tokens[b]?.kind === 'open') return undefined;
    return [column, b];
  }

  private tightAt(i: number): boolean {
    const t = this.tokens[i];
    return t !== undefined && ((t.kind === 'op' && TIGHTER_OPS.has(t.text)) || t.kind === 'dot');
  }

  /** A literal operand at i whose right neighbour does not bind tighter. */
  private operandLiteral(i: number, to: number): [LiteralSlot, number] | undefined {
    const found = this.literalAt(i, to);
    if (found === undefined) return undefined;
    const after = this.tokens[found[1]];
    if (after !== undefined && ((after.kind === 'op' && TIGHTER_OPS.has(after.text) && after.text !== '::') || after.kind === 'open' || after.kind === 'dot')) return undefined;
    return found;
  }

  private readComparisons(seg: Segment, assignmentEquals: ReadonlySet<number>): Comparison[] {
    const found: Comparison[] = [];
    for (let k = seg.first; k < seg.end; k++) {
      const t = this.tokens[k];
      const symbolic = t.kind === 'op' && COMPARISON_OPS.has(t.text) && !assignmentEquals.has(k);
      const worded = t.kind === 'word' && WORD_OPS.has(t.text);
      if (!symbolic && !worded) continue;
      const negated = worded && this.isWord(k - 1, 'NOT');
      const left = this.columnEndingAt(negated ? k - 1 : k, seg.first);
      if (left !== undefined) {
        const slots = this.rightOperands(t, k + 1, seg.end);
        const variables = this.variableOperand(k + 1);
        if (slots.length > 0 || variables.length > 0) found.push({ column: left[0], operator: (negated ? 'NOT ' : '') + t.text, slots, variables });
        // `"4111…" = card` in SQLite: the left side is a name that may be a string; read it the other way round too.
        if (!this.mayBeString(this.tokens[k - 1])) continue;
      }
      if (symbolic && SYMMETRIC_OPS.has(t.text)) {
        // literal op column
        const right = this.columnStartingAt(k + 1, seg.end);
        if (right === undefined) continue;
        const variable = this.variableName(k - 1);
        if (variable !== undefined && !this.tightAt(k - 2)) {
          found.push({ column: right[0], operator: t.text, slots: [], variables: [variable] });
          continue;
        }
        let a = k - 1;
        if (this.tokens[a]?.kind === 'number' && this.tokens[a - 1]?.kind === 'op' && (this.tokens[a - 1].text === '-' || this.tokens[a - 1].text === '+')) a--;
        else if (this.tokens[a]?.kind === 'string' && this.tokens[a - 1]?.kind === 'word' && TYPED_LITERAL_WORDS.has(this.tokens[a - 1].text)) a--;
        const lit = this.literalAt(a, k);
        if (lit === undefined || lit[1] !== k || this.tightAt(a - 1)) continue;
        found.push({ column: right[0], operator: t.text, slots: [lit[0]], variables: [] });
      }
    }
    return found;
  }

  /** A variable standing alone as the right operand at i. */
  private variableOperand(i: number): string[] {
    const name = this.variableName(i);
    const after = this.tokens[i + 1];
    if (name === undefined || (after !== undefined && ((after.kind === 'op' && TIGHTER_OPS.has(after.text)) || after.kind === 'open' || after.kind === 'dot'))) return [];
    return [name];
  }

  private rightOperands(op: SqlToken, i: number, to: number): LiteralSlot[] {
    if (op.kind === 'op' || op.text === 'LIKE' || op.text === 'ILIKE') {
      const lit = this.operandLiteral(i, to);
      return lit === undefined ? [] : [lit[0]];
    }
    if (op.text === 'IN') {
      if (this.tokens[i]?.kind !== 'open' || this.match[i] === -1 || this.isWord(i + 1, 'SELECT')) return [];
      const close = this.match[i];
      const slots: LiteralSlot[] = [];
      for (const [a, b] of this.splitList(i + 1, close, this.depth[i] + 1)) {
        const lit = this.literalAt(a, b);
        if (lit !== undefined && lit[1] === b) slots.push(lit[0]);
      }
      return slots;
    }
    // BETWEEN lo AND hi: either bound may be a literal.
    const slots: LiteralSlot[] = [];
    const low = this.operandLiteral(i, to);
    let and = i;
    if (low !== undefined) {
      slots.push(low[0]);
      and = low[1];
    } else {
      while (and < to && !(this.isWord(and, 'AND') && this.depth[and] === this.depth[i])) and++;
    }
    if (this.isWord(and, 'AND')) {
      const high = this.operandLiteral(and + 1, to);
      if (high !== undefined) slots.push(high[0]);
    }
    return slots;
  }

  /** The same normalised key the parser's literal gets, for the cross-check. */
  slotKey(slot: LiteralSlot): string {
    return tokenLiteralKey(this.table, slot);
  }
}

/** A literal's identity for comparing token and tree: its kind, and its value for numbers. */
export function tokenLiteralKey(tokens: SqlTokens, slot: LiteralSlot): string {
  const k = slot.token;
  switch (slot.kind) {
    case 'null':
      return 'null';
    case 'bool':
      return 'bool:' + tokens.text(k);
    case 'name':
      return 'name';
    case 'number': {
      const text = tokens.sql.slice(tokens.starts[k], tokens.ends[k]);
      if (/^0x/i.test(text)) return 's';
      return 'n:' + String(Number((slot.negative ? '-' : '') + text));
    }
    default:
      // Strings compare by kind only: grammars disagree on whether the tree holds them raw or unescaped.
      return 's';
  }
}

/** What the statement reader takes from the parser's tree. */
interface TreeFacts {
  readonly type: string;
  readonly tables: Map<string, string>;
  /** INSERT: the table the tree names first. */
  readonly insertTable: string | undefined;
  readonly readTables: string[];
  readonly createdTable: string | undefined;
  readonly astComparisons: AstComparison[];
  readonly bindings: SqlBinding[];
  /** The tree, for the shape cross-checks; undefined for a plain statement. */
  readonly ast: SqlAst | undefined;
  /** A plain UPDATE's SET targets (the tree's are read from `ast`). */
  readonly setColumns: readonly string[];
}

function treeFacts(ast: SqlAst, dialect: SqlDialect): TreeFacts {
  const astComparisons: AstComparison[] = [];
  collectAstComparisons(ast, dialect, astComparisons, 0);
  return {
    type: typeof ast.type === 'string' ? ast.type : 'unknown',
    tables: tableMap(ast),
    insertTable: firstTableName(ast.table),
    readTables: readTablesOf(ast),
    createdTable: createdTable(ast),
    astComparisons,
    bindings: collectBindings(ast, dialect),
    ast,
    setColumns: [],
  };
}

function isPlain(source: SqlAst | PlainStatement): source is PlainStatement {
  return source.plain === true;
}

/**
 * The same facts for a plain statement (plain-statements.ts), as the tree would give them: its SET
 * list and SELECT outputs are bindings that read no other column; FROM is the table read. The
 * comparisons the tree would list are the ones the tokens find, since every condition is
 * `column op literal`: the cross-check has nothing to add, so none are listed.
 */
function plainFacts(plain: PlainStatement): TreeFacts {
  const bindings: SqlBinding[] = [];
  for (const column of plain.setColumns) bindings.push({ columns: [column], qualifier: undefined, literal: false, reads: [], construct: 'a SET list', copies: true });
  for (const column of plain.outputs) bindings.push({ columns: [column], qualifier: undefined, literal: false, reads: [column.toLowerCase()], construct: 'a SELECT list', copies: true });
  const reads = plain.type === 'select' || plain.type === 'delete';
  return {
    type: plain.type,
    tables: new Map([[plain.table.toLowerCase(), plain.table]]),
    insertTable: plain.type === 'insert' ? plain.table : undefined,
    readTables: reads ? [plain.table.toLowerCase()] : [],
    createdTable: undefined,
    astComparisons: [],
    bindings,
    ast: undefined,
    setColumns: plain.setColumns,
  };
}

function astSetList(value: unknown): unknown[] | undefined {
  return Array.isArray(value) ? value : undefined;
}

function firstTableName(value: unknown): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  const r = record(first);
  return typeof r?.table === 'string' ? r.table : undefined;
}

/** Tables named by the statement's own table and FROM lists, by lower-cased name and alias. */
function tableMap(ast: SqlAst): Map<string, string> {
  const map = new Map<string, string>();
  for (const list of [ast.table, ast.from]) {
    if (!Array.isArray(list)) continue;
    for (const entry of list) {
      const r = record(entry);
      if (r === undefined || typeof r.table !== 'string') continue;
      map.set(r.table.toLowerCase(), r.table);
      if (typeof r.as === 'string') map.set(r.as.toLowerCase(), r.table);
    }
  }
  return map;
}

/** The table `CREATE TABLE t AS SELECT …` or `SELECT … INTO t` creates from a query. */
function createdTable(ast: SqlAst): string | undefined {
  if (ast.type === 'create' && ast.query_expr !== undefined && ast.query_expr !== null) return firstTableName(ast.table);
  const into = record(ast.into);
  if (ast.type === 'select' && into !== undefined && into.keyword !== 'var') {
    if (typeof into.expr === 'string') return into.expr;
    return firstTableName(into.expr);
  }
  return undefined;
}

/** Tables named in FROM and JOIN lists anywhere in the tree (not the INSERT or UPDATE target). */
function readTablesOf(ast: SqlAst): string[] {
  const found = new Set<string>();
  const visit = (node: unknown, depth: number): void => {
    if (depth > 400 || node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const child of node) visit(child, depth + 1);
      return;
    }
    const r = node as Record<string, unknown>;
    if (Array.isArray(r.from)) {
      for (const entry of r.from) {
        const table = record(entry)?.table;
        if (typeof table === 'string') found.add(table.toLowerCase());
      }
    }
    for (const key of Object.keys(r)) if (key !== 'loc') visit(r[key], depth + 1);
  };
  visit(ast, 0);
  return [...found];
}

/** Every comparison of a column with literals anywhere in the tree (subqueries included). */
function collectAstComparisons(node: unknown, dialect: SqlDialect, out: AstComparison[], depth: number): void {
  if (depth > 400 || node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const child of node) collectAstComparisons(child, dialect, out, depth + 1);
    return;
  }
  const r = node as Record<string, unknown>;
  if (r.type === 'binary_expr' && typeof r.operator === 'string' && AST_COMPARISON_OPS.has(r.operator.toUpperCase())) {
    const left = astColumn(r.left, dialect);
    const right = astColumn(r.right, dialect);
    if (left !== undefined) {
      const keys = literalKeys(r.right, dialect);
      if (keys.length > 0) out.push({ ...left, keys });
    } else if (right !== undefined && SYMMETRIC_OPS.has(r.operator)) {
      const keys = literalKeys(r.left, dialect);
      if (keys.length > 0) out.push({ ...right, keys });
    }
  }
  for (const key of Object.keys(r)) {
    if (key !== 'loc') collectAstComparisons(r[key], dialect, out, depth + 1);
  }
}

function literalKeys(node: unknown, dialect: SqlDialect): string[] {
  const r = record(node);
  if (r?.type === 'expr_list' && Array.isArray(r.value)) {
    return r.value.map((v) => astLiteralKey(v, dialect)).filter((k): k is string => k !== undefined);
  }
  const key = astLiteralKey(node, dialect);
  return key === undefined ? [] : [key];
}
