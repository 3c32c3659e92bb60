// The SQL codec: protects literals bound to protected columns (INSERT values, SET assignments,
// comparisons) by splicing new literals into the original text; every other byte stays as written.

import { DpgError } from '../../core/errors.ts';
import { safeName } from '../../core/safe-name.ts';
import type { Scalar } from '../../core/types.ts';
import type { CodecOptions, DocumentCodec, FieldAction, FieldResolver } from '../codec.ts';
import { UNNAMED, type SqlBinding } from './bindings.ts';
import { sqlDialect, type SqlDialect } from './dialects.ts';
import { binaryBytes, binaryBytesAt, binaryTexts, decodeNumber, decodeString, decodeStringAt, encodeLiteral, rewriteStringAt, styleOf } from './literals.ts';
import {
  DEFAULT_SQL_LIMITS,
  readSqlScript,
  tokenLiteralKey,
  type ColumnName,
  type LiteralSlot,
  type SqlLimits,
  type SqlRoute,
  type SqlScript,
  type SqlStatement,
  type ValueItem,
} from './script.ts';

interface Edit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** Protects a SQL script. Throws MALFORMED_DATA_SET, PAYLOAD_TOO_LARGE or INVALID_REQUEST (dialect). */
export function protectSql(sql: string, resolver: FieldResolver, options: CodecOptions, limits: SqlLimits = DEFAULT_SQL_LIMITS, route: SqlRoute = 'auto'): string {
  const dialect = sqlDialect(options.sqlDialect);
  const script = readSqlScript(sql, dialect, limits, route);
  const protector = new ScriptProtector(script, resolver);
  // A copied column is treated as protected when feeds are collected again, so chains of copies
  // (staging → s2 → customers) are followed to the literal; the sets only grow, so this ends.
  for (let changed = true; changed; ) {
    changed = false;
    for (const statement of script.statements) if (protector.collectFeeds(statement)) changed = true;
  }
  for (const statement of script.statements) protector.statement(statement);
  protector.protectPending();
  protector.detectInLiterals();
  return splice(sql, protector.edits);
}

export const sqlCodec: DocumentCodec = {
  type: 'SQL',
  protect(input: string | unknown, resolver: FieldResolver, options: CodecOptions): string {
    if (typeof input !== 'string') throw new DpgError('MALFORMED_DATA_SET', 'SQL data set must be text');
    return protectSql(input, resolver, options);
  },
};

/** Value of a literal as the technique sees it. */
export function literalValue(script: SqlScript, slot: LiteralSlot): Scalar {
  const tokens = script.tokens;
  const k = slot.token;
  switch (slot.kind) {
    case 'null':
      return null;
    case 'bool':
      return tokens.text(k) === 'TRUE';
    case 'number':
      return decodeNumber(script.sql.slice(tokens.starts[k], tokens.ends[k]), slot.negative, script.dialect);
    case 'name':
      return tokens.text(k);
    default:
      return decodeStringAt(tokens, k, script.dialect);
  }
}

class ScriptProtector {
  readonly edits: Edit[] = [];
  /** Column names (lower case) the script reads into protected columns; tables it reads into them with `*`. */
  private readonly feeds = new Set<string>();
  private readonly starFeeds = new Set<string>();
  private readonly edited = new Set<number>();
  /** Literals waiting for their action, by action, in the order they were found (see protectPending). */
  private readonly pending = new Map<FieldAction, { slots: LiteralSlot[]; values: Scalar[]; labels: string[] }>();
  private readonly actions = new Map<string, FieldAction | undefined>();
  private readonly sql: string;
  private readonly dialect: SqlDialect;

  constructor(
    private readonly script: SqlScript,
    private readonly resolver: FieldResolver,
  ) {
    this.sql = script.sql;
    this.dialect = script.dialect;
  }

  statement(st: SqlStatement): void {
    this.checkReliable(st);
    this.checkBindings(st);
    this.checkFeeds(st);
    // Comparisons first: where a comparison sits inside a SET or VALUES expression, its own column wins.
    for (const cmp of st.comparisons) {
      const path = this.pathOf(st, cmp.column, undefined);
      const action = this.action(cmp.column.name, path);
      if (action === undefined) continue;
      for (const slot of cmp.slots) {
        const value = literalValue(this.script, slot);
        if (action.removes(value)) {
          if (cmp.operator === '<=>') {
            throw new DpgError('MALFORMED_DATA_SET', `A removed column is compared with <=> at ${this.where(slot.start)}: it cannot be protected without changing which rows match`);
          }
          // An unknown comparison never widens what a WHERE matches: the safe stand-in for a removed value.
          this.replace(slot, 'NULL');
        } else {
          this.applyOne(action, slot, value, this.label(st, cmp.column, undefined));
        }
      }
      for (const variable of cmp.variables) this.protectVariable(variable, action, this.label(st, cmp.column, undefined), cmp.column.start);
    }
    if (st.insert !== undefined) this.insert(st);
    // A column default is stored in every row that does not name the column: protect it like a value.
    for (const d of st.defaults) {
      const action = this.action(d.column.name, this.pathOf(st, d.column, st.defaultTable));
      if (action === undefined) continue;
      const label = this.label(st, d.column, st.defaultTable);
      if (d.item.literal !== undefined && d.item.literal.kind !== 'name' && action.removes(literalValue(this.script, d.item.literal))) this.replace(d.item.literal, 'NULL');
      else this.applyItem(action, d.item, label);
    }
    for (const list of st.assignmentLists) {
      const removed: number[] = [];
      list.items.forEach((assignment, k) => {
        const path = this.pathOf(st, assignment.column, list.table);
        const action = this.action(assignment.column.name, path);
        if (action === undefined) return;
        if (action.removes(this.itemValue(assignment.item))) removed.push(k);
        else this.applyItem(action, assignment.item, this.label(st, assignment.column, list.table));
      });
      if (removed.length === 0) continue;
      if (removed.length === list.items.length) {
        if (list.clauseStart === undefined) {
          this.drop(st);
          return;
        }
        this.edits.push({ start: list.clauseStart, end: list.items[list.items.length - 1].end, text: list.emptyClause });
      } else {
        this.removeFromList(list.items, removed);
      }
    }
  }

  private insert(st: SqlStatement): void {
    const insert = st.insert!;
    if (st.insertWithoutColumns) {
      throw new DpgError('MALFORMED_DATA_SET', `INSERT at ${this.where(st.start)} has no column list: its values cannot be matched to protected columns; name the columns`);
    }
    const removed: number[] = [];
    insert.columns.forEach((column, c) => {
      const path = this.pathOf(st, column, insert.table);
      const action = this.action(column.name, path);
      if (action === undefined) return;
      const items = insert.rows.map((row) => row[c]).filter((item): item is ValueItem => item !== undefined);
      // Each item's value is read once, for the Restrict question and for the technique.
      const itemValues = items.map((item) => this.itemValue(item));
      if (itemValues.some((value) => action.removes(value))) {
        removed.push(c);
        for (const item of items) for (const variable of item.variables) this.protectVariable(variable, action, safeName(column.name), item.start);
        return;
      }
      const label = this.label(st, column, insert.table);
      items.forEach((item, n) => {
        if (item.literal === undefined || this.edited.has(item.literal.start)) return;
        if (item.literal.kind === 'name') throw this.nameRefused(item.literal, label);
        this.checkText(item.literal, label);
        this.enqueue(action, item.literal, itemValues[n], label);
      });
      for (const item of items) if (item.literal === undefined) this.applyItem(action, item, label);
    });
    if (removed.length === 0) return;
    if (removed.length === insert.columns.length) {
      this.drop(st);
      return;
    }
    this.removeFromList(insert.columns, removed);
    for (const row of insert.rows) this.removeFromList(row, removed);
  }

  /** Refuses statements whose reading did not match the parser's, when they touch protected columns. */
  private checkReliable(st: SqlStatement): void {
    const involved = (name: string, qualifier: string | undefined, table: string | undefined): boolean =>
      this.action(name, this.pathOf(st, { name, qualifier, start: 0, end: 0 }, table)) !== undefined;
    if (st.mismatches.length > 0) {
      const touches =
        (st.insert?.columns.some((c) => involved(c.name, c.qualifier, st.insert!.table)) ?? false) ||
        st.assignmentLists.some((l) => l.items.some((a) => involved(a.column.name, a.column.qualifier, l.table))) ||
        st.astComparisons.some((c) => involved(c.column, c.qualifier, undefined)) ||
        (st.insert !== undefined && st.insert.columns.length === 0);
      if (touches) throw this.unreadable(st, st.mismatches[0]);
    }
    // Every comparison the parser saw on a protected column must be one we found on the tokens
    // (a plain statement lists none: the tokens found every one).
    if (st.astComparisons.length === 0) return;
    const found = new Map<string, number>();
    for (const cmp of st.comparisons) {
      for (const slot of cmp.slots) {
        const key = cmp.column.name.toLowerCase() + '\u0000' + tokenLiteralKey(this.script.tokens, slot);
        found.set(key, (found.get(key) ?? 0) + 1);
      }
    }
    for (const cmp of st.astComparisons) {
      if (!involved(cmp.column, cmp.qualifier, undefined)) continue;
      for (const literalKey of cmp.keys) {
        const key = cmp.column.toLowerCase() + '\u0000' + literalKey;
        const left = found.get(key) ?? 0;
        if (left === 0) throw this.unreadable(st, 'a comparison on a protected column');
        found.set(key, left - 1);
      }
    }
  }

  private unreadable(st: SqlStatement, what: string): DpgError {
    return new DpgError(
      'MALFORMED_DATA_SET',
      `SQL statement at ${this.where(st.start)} could not be read reliably (${what}); protected values cannot be located`,
    );
  }

  /**
   * A column's own rule. The content-detection action is not a column rule: literals it covers are
   * found token by token in detectInLiterals, wherever they stand.
   */
  private action(name: string, path: string | undefined): FieldAction | undefined {
    const key = path === undefined ? name : name + '\u0000' + path;
    if (this.actions.has(key)) return this.actions.get(key);
    let action = this.resolver.resolve(name, path);
    if (action?.byContent === true) action = undefined;
    this.actions.set(key, action);
    return action;
  }

  /**
   * With detection by content on, every string or number literal no column rule has handled (values
   * of unprotected columns, function arguments, literals the column binding could not place) is
   * scanned, and what is found is protected in place.
   */
  detectInLiterals(): void {
    const content = this.resolver.contentAction?.();
    if (content === undefined) return;
    this.checkConcatenations(content);
    const tokens = this.script.tokens.all();
    for (let k = 0; k < tokens.length; k++) {
      const token = tokens[k];
      if (this.edited.has(token.start)) continue;
      const bytes = binaryBytes(this.sql, token, this.dialect);
      if (bytes !== undefined) {
        // Bytes the server may store as text: read them as it may, and refuse when they hold detected data.
        for (const text of binaryTexts(bytes, this.dialect)) {
          if (!Object.is(content.apply(text, () => `literal at ${this.where(token.start)}`), text)) throw this.binaryRefused(token.start, 'detected data');
        }
        continue;
      }
      let slot: LiteralSlot;
      if (token.kind === 'string') {
        if (token.prefix === 'B') continue; // PostgreSQL bit strings
        slot = { start: token.start, end: token.end, token: k, kind: 'string', negative: false };
      } else if (token.kind === 'number') {
        // Too short for any detected kind (a hex integer is shorter than its decimal value: always read).
        if (token.end - token.start < 12 && !/^0x/i.test(this.sql.slice(token.start, token.end))) continue;
        slot = { start: token.start, end: token.end, token: k, kind: 'number', negative: false };
      } else continue;
      const value = literalValue(this.script, slot);
      this.write(slot, value, content.apply(value, () => `literal at ${this.where(slot.start)}`));
    }
  }

  /**
   * A value split across literals the server joins — `'4111 1111' || ' 1111 1111'`, T-SQL's `+`,
   * `CONCAT('…', '…')`, `CONCAT_WS(' ', '…', '…')` — is detected in the joined text. Protecting the
   * pieces one by one cannot protect what only the whole holds, so when detection finds more in the
   * whole than in its pieces the request is refused.
   */
  private checkConcatenations(content: FieldAction): void {
    const tokens = this.script.tokens.all();
    const text = (k: number): string | undefined => {
      const t = tokens[k];
      if (t?.kind !== 'string' || binaryBytes(this.sql, t, this.dialect) !== undefined) return undefined;
      return decodeString(this.sql, t, this.dialect);
    };
    const joins = (k: number): boolean => {
      const t = tokens[k];
      return t?.kind === 'op' && (t.text === '||' || (t.text === '+' && this.dialect.name === 'transactsql'));
    };
    const refuse = (at: number): DpgError =>
      new DpgError('MALFORMED_DATA_SET', `SQL at ${this.where(at)} joins literals into a value that holds detected data no single literal holds; it cannot be protected piece by piece. Send the value as one literal`);
    const check = (pieces: string[], separator: string, at: number): void => {
      if (pieces.length < 2) return;
      const whole = pieces.join(separator);
      const spansOf = content.detectedSpans?.bind(content);
      if (spansOf === undefined) {
        const where = () => `literal at ${this.where(at)}`;
        const protectedWhole = content.apply(whole, where);
        if (!Object.is(protectedWhole, whole) && protectedWhole !== pieces.map((piece) => content.apply(piece, where)).join(separator)) throw refuse(at);
        return;
      }
      // Every value found in the whole must be found, at the same place, in one piece alone (spans,
      // not outputs: Encrypt's output is randomised, a pseudonym may depend on its neighbours).
      const inPieces = new Set<string>();
      let offset = 0;
      for (const piece of pieces) {
        for (const [start, end] of spansOf(piece)) inPieces.add(`${offset + start}:${offset + end}`);
        offset += piece.length + separator.length;
      }
      for (const [start, end] of spansOf(whole)) if (!inPieces.has(`${start}:${end}`)) throw refuse(at);
    };
    for (let k = 0; k < tokens.length; k++) {
      // 'a' || 'b' || 'c'
      if (text(k) !== undefined && joins(k + 1) && text(k + 2) !== undefined && !joins(k - 1)) {
        const pieces: string[] = [];
        let j = k;
        for (; text(j) !== undefined; j += 2) {
          pieces.push(text(j)!);
          if (!joins(j + 1)) break;
        }
        check(pieces, '', tokens[k].start);
      }
      // CONCAT('a', 'b', …): its leading literal arguments; CONCAT_WS('sep', 'a', …) joins them with the separator.
      const t = tokens[k];
      if (t.kind === 'word' && (t.text === 'CONCAT' || t.text === 'CONCAT_WS') && tokens[k + 1]?.kind === 'open') {
        const pieces: string[] = [];
        let separator = '';
        let j = k + 2;
        if (t.text === 'CONCAT_WS') {
          separator = text(j) ?? '';
          j += 2;
        }
        for (; j < tokens.length && tokens[j].kind !== 'close'; j += 2) {
          const piece = text(j);
          if (piece === undefined || (tokens[j + 1]?.kind !== 'comma' && tokens[j + 1]?.kind !== 'close')) break;
          pieces.push(piece);
        }
        check(pieces, separator, t.start);
      }
    }
  }

  /** `table.column` when paths are in use; the table comes from the qualifier, the list's table or the statement's only table. */
  private pathOf(st: SqlStatement, column: ColumnName, table: string | undefined): string | undefined {
    if (!this.resolver.usesPaths) return undefined;
    const owner = this.ownerOf(st, column, table);
    return owner === undefined ? column.name : `${owner}.${column.name}`;
  }

  private ownerOf(st: SqlStatement, column: ColumnName, table: string | undefined): string | undefined {
    return column.qualifier !== undefined ? (st.tables.get(column.qualifier.toLowerCase()) ?? column.qualifier) : (table ?? st.defaultTable);
  }

  /**
   * The column as failure locations and messages show it: like its path, but a name that is not a
   * plain identifier (a quoted `"jane@example.com"` column, say) is withheld.
   */
  private label(st: SqlStatement, column: ColumnName, table: string | undefined): string {
    const owner = this.resolver.usesPaths ? this.ownerOf(st, column, table) : undefined;
    return owner === undefined ? safeName(column.name) : `${safeName(owner)}.${safeName(column.name)}`;
  }

  /** A `"…"` name bound to a protected column, where the server may read it as a string. */
  private nameRefused(slot: LiteralSlot, label: string): DpgError {
    return new DpgError(
      'MALFORMED_DATA_SET',
      `SQL at ${this.where(slot.start)} gives protected column ${label} a double-quoted name, which ${this.dialect.name} reads as a string when no column has that name; write strings in single quotes`,
    );
  }

  /** A binary literal bound to a protected column: the server turns its bytes into text in a character set the gateway cannot see. */
  private checkText(slot: LiteralSlot, label: string): void {
    if (binaryBytesAt(this.script.tokens, slot.token, this.dialect) !== undefined) throw this.binaryRefused(slot.start, `protected column ${label}`);
  }

  private binaryRefused(offset: number, what: string): DpgError {
    return new DpgError(
      'MALFORMED_DATA_SET',
      `SQL at ${this.where(offset)} gives ${what} as a binary literal (X'…', 0x…, b'…'), whose bytes the server reads as text in a character set the gateway cannot see; send the value as a string literal`,
    );
  }

  private where(offset: number): string {
    const { line, column } = this.script.positions.lineColumn(offset);
    return `${line}:${column}`;
  }

  /** The value a Restrict decision is asked about: the literal, or an expression's text. */
  private itemValue(item: ValueItem): Scalar {
    if (item.literal !== undefined) return literalValue(this.script, item.literal);
    return this.sql.slice(item.start, item.end);
  }

  private applyItem(action: FieldAction, item: ValueItem, column: string): void {
    if (item.literal?.kind === 'name') throw this.nameRefused(item.literal, column);
    if (item.literal !== undefined) {
      if (!this.edited.has(item.literal.start)) this.applyOne(action, item.literal, literalValue(this.script, item.literal), column);
      return;
    }
    // Protecting an expression's literals one by one leaks: masking CONCAT('123-45', '-6789') piecewise keeps most
    // of the value, and the pieces of a deterministic cipher no longer match the whole. Refuse instead.
    if (item.inner.length > 0) throw this.expressionRefused(`protected column ${column}`, 'an expression', item.start);
    if (item.variables.length > 1) throw this.expressionRefused(`protected column ${column}`, 'an expression over several variables', item.start);
    if (item.variables.length === 1) this.protectVariable(item.variables[0], action, column, item.start);
    else if (this.dialect.name === 'bigquery' && this.script.valuesNames.has(item.start)) {
      // BigQuery reads a bare name in VALUES as a script variable (DECLARE / SET), which may hold any literal.
      throw this.variableRefused(this.sql.slice(item.start, item.end), column, item.start, 'is a BigQuery script variable');
    }
  }

  /**
   * A variable whose value lands in (or is compared with) a protected column: every assignment the
   * script makes to it is protected with the column's action, through other variables it copies.
   * A variable the script does not assign (set by an earlier request), or fills from a query that
   * carries literals, or assigns an expression holding literals, is refused.
   */
  private protectVariable(name: string, action: FieldAction, column: string, at: number, seen = new Set<string>()): void {
    if (seen.has(name)) return;
    seen.add(name);
    const assignments = this.script.variables.get(name);
    if (assignments === undefined || assignments.length === 0) throw this.variableRefused(name, column, at, 'is not assigned in this script');
    for (const assignment of assignments) {
      const item = assignment.item;
      if (item === undefined) {
        if (assignment.statementHasLiteral) throw this.variableRefused(name, column, assignment.start, 'is filled by a query that carries literals, reads other variables or fetches from a cursor');
        continue;
      }
      if (item.literal !== undefined) {
        if (item.literal.kind === 'name') throw this.nameRefused(item.literal, column);
        if (this.edited.has(item.literal.start)) continue;
        const value = literalValue(this.script, item.literal);
        if (action.removes(value)) this.replace(item.literal, 'NULL');
        else this.applyOne(action, item.literal, value, column);
        continue;
      }
      if (item.inner.length > 0) throw this.variableRefused(name, column, assignment.start, 'is assigned an expression holding literals');
      for (const other of item.variables) this.protectVariable(other, action, column, assignment.start, seen);
    }
  }

  /** `name` is a variable name as written in the script, never a value. */
  private variableRefused(name: string, column: string, offset: number, why: string): DpgError {
    return new DpgError(
      'MALFORMED_DATA_SET',
      `SQL at ${this.where(offset)} passes variable ${safeName(name)} to protected column ${column}, and the variable ${why}; its value cannot be protected where it is set. Send the value as a literal or a parameter`,
    );
  }

  /**
   * Refuses values that reach a protected column other than as one literal: an expression or subquery compared
   * with it, a SELECT output named after it, or a literal read into it through a WITH or derived table.
   */
  private checkBindings(st: SqlStatement): void {
    if (st.bindings.length === 0) return;
    const { reaches } = this.taint(st);
    // A table this script copies into a protected column with `*`: every literal output filling it reaches it.
    const fedTable = st.writesTable !== undefined && this.starFeeds.has(st.writesTable);
    for (const binding of st.bindings) {
      if (!binding.literal) continue;
      const column = reaches(binding) ?? (fedTable ? `table ${safeName(st.writesTable!)}, which this script copies into a protected column` : undefined);
      if (column !== undefined) throw this.expressionRefused(column, binding.construct, st.start);
    }
  }

  /**
   * The columns a statement reads into protected columns (`*` for a star), through any number of
   * WITH/derived levels, and how a binding reaches a protected column (for the message; undefined
   * when it does not).
   */
  private taint(st: SqlStatement, copiesOnly = false): { tainted: ReadonlySet<string>; reaches: (binding: SqlBinding) => string | undefined } {
    const tainted = new Set<string>();
    /** How the binding reaches a protected column, for the message; undefined when it does not. */
    const protectedColumn = (binding: SqlBinding): string | undefined => {
      for (const column of binding.columns) {
        const ref = { name: column, qualifier: binding.qualifier, start: 0, end: 0 };
        if (column !== '*' && column !== UNNAMED && this.action(column, this.pathOf(st, ref, undefined)) !== undefined) return `protected column ${safeName(column)}`;
        if (this.feeds.has(column.toLowerCase())) return `column ${safeName(column)}, which this script copies into a protected column`;
      }
      for (const column of binding.columns) {
        // '*': the target column is unknown (INSERT … SELECT without a column list), so it may be protected.
        if (column === '*') return 'a column the INSERT does not name';
        if (column === UNNAMED) {
          if (tainted.size > 0) return 'an unnamed query output, which a protected column may read (by position or by the name the server gives it)';
          continue;
        }
        if (tainted.has('*') || tainted.has(column.toLowerCase())) return `column ${safeName(column)}, which is read into a protected column`;
      }
      return undefined;
    };
    // A protected value that reads other columns makes them protected too, through any number of WITH/derived levels.
    for (let changed = true; changed; ) {
      changed = false;
      for (const binding of st.bindings) {
        if ((copiesOnly && !binding.copies) || protectedColumn(binding) === undefined) continue;
        for (const read of binding.reads) {
          if (!tainted.has(read)) {
            tainted.add(read);
            changed = true;
          }
        }
      }
    }
    return { tainted, reaches: protectedColumn };
  }

  /**
   * Records what a statement copies into protected columns from other columns (`INSERT INTO
   * customers (name) SELECT x FROM staging`): a literal the same script writes to such a column
   * (`INSERT INTO staging (x) VALUES ('Jane Doe')`) reaches the protected column too.
   */
  collectFeeds(st: SqlStatement): boolean {
    if (st.bindings.length === 0) return false;
    const before = this.feeds.size + this.starFeeds.size;
    // Only copies count: a column compared with a protected one (`JOIN … ON c.name = o.buyer`) holds its own data.
    const { tainted } = this.taint(st, true);
    for (const name of tainted) {
      if (name === '*') for (const table of st.readTables) this.starFeeds.add(table);
      else this.feeds.add(name);
    }
    return this.feeds.size + this.starFeeds.size !== before;
  }

  /** Refuses literals written to a column this script copies into a protected one (see collectFeeds). */
  private checkFeeds(st: SqlStatement): void {
    if (this.feeds.size === 0 && this.starFeeds.size === 0) return;
    const check = (column: ColumnName, table: string | undefined, items: readonly (ValueItem | undefined)[]): void => {
      const fed = this.feeds.has(column.name.toLowerCase()) || (table !== undefined && this.starFeeds.has(table.toLowerCase()));
      if (!fed || this.action(column.name, this.pathOf(st, column, table)) !== undefined) return;
      for (const item of items) {
        if (item === undefined) continue;
        const carries = (item.literal !== undefined && item.literal.kind !== 'null' && item.literal.kind !== 'bool') || item.inner.length > 0 || item.variables.length > 0;
        if (carries) {
          throw new DpgError(
            'MALFORMED_DATA_SET',
            `SQL at ${this.where(item.start)} writes literal data to column ${this.label(st, column, table)}, which this script copies into a protected column; it cannot be protected there. Give that column a rule in the manifest too`,
          );
        }
      }
    };
    if (st.insert !== undefined) {
      const insert = st.insert;
      insert.columns.forEach((column, c) => check(column, insert.table, insert.rows.map((row) => row[c])));
    }
    for (const list of st.assignmentLists) for (const a of list.items) check(a.column, list.table ?? st.defaultTable, [a.item]);
  }

  /** `target` names the column and how it is protected ("protected column ssn"); never a value. */
  private expressionRefused(target: string, construct: string, offset: number): DpgError {
    return new DpgError(
      'MALFORMED_DATA_SET',
      `SQL at ${this.where(offset)} passes literal data to ${target} through ${construct}, where it cannot be ` +
        'protected as one value; send the value as a single literal or a parameter',
    );
  }

  private applyOne(action: FieldAction, slot: LiteralSlot, value: Scalar, label: string): void {
    if (slot.kind === 'name') throw this.nameRefused(slot, label);
    this.checkText(slot, label);
    this.enqueue(action, slot, value, label);
  }

  /**
   * Queues a literal for its action (see protectPending). It counts as handled from here on, as a
   * written one does: no other rule, and not the detection by content, takes it again.
   */
  private enqueue(action: FieldAction, slot: LiteralSlot, value: Scalar, label: string): void {
    this.edited.add(slot.start);
    let batch = this.pending.get(action);
    if (batch === undefined) {
      batch = { slots: [], values: [], labels: [] };
      this.pending.set(action, batch);
    }
    batch.slots.push(slot);
    batch.values.push(value);
    batch.labels.push(label);
  }

  /**
   * Protects the queued literals once the whole script is read and checked: one call per action
   * for the script (a batched cipher such as FF1 runs once for all its values, and a refused
   * script calls no technique), then each result is written in place.
   */
  protectPending(): void {
    for (const [action, { slots, values, labels }] of this.pending) {
      const results =
        slots.length === 1
          ? [action.apply(values[0], () => `${labels[0]} at ${this.where(slots[0].start)}`)]
          : action.applyBatch(values, (k) => `${labels[k]} at ${this.where(slots[k].start)}`);
      for (let k = 0; k < slots.length; k++) this.write(slots[k], values[k], results[k]);
    }
    this.pending.clear();
  }

  private write(slot: LiteralSlot, before: Scalar, after: Scalar): void {
    if (Object.is(before, after)) {
      this.edited.add(slot.start);
      return;
    }
    // A string stays a string written as before wherever the rule left its characters as they were.
    const tokens = this.script.tokens;
    const followed =
      typeof before === 'string' && typeof after === 'string' && slot.kind !== 'number' && slot.start === tokens.starts[slot.token] && slot.end === tokens.ends[slot.token]
        ? rewriteStringAt(tokens, slot.token, before, after, this.dialect)
        : undefined;
    this.replace(slot, followed ?? encodeLiteral(after, styleOf(this.sql, tokens.token(slot.token)!, slot.kind === 'number'), this.dialect));
  }

  private replace(slot: LiteralSlot, text: string): void {
    this.edited.add(slot.start);
    this.edits.push({ start: slot.start, end: slot.end, text });
  }

  /** Removes list elements with the commas between them, keeping the others as written. */
  private removeFromList(elements: readonly { start: number; end: number }[], removed: readonly number[]): void {
    const gone = new Set(removed);
    for (const k of removed) {
      let next = k + 1;
      while (next < elements.length && gone.has(next)) next++;
      if (next < elements.length) {
        this.edits.push({ start: elements[k].start, end: elements[next].start, text: '' });
      } else {
        let prev = k - 1;
        while (prev >= 0 && gone.has(prev)) prev--;
        this.edits.push({ start: elements[prev].end, end: elements[k].end, text: '' });
      }
    }
  }

  private drop(st: SqlStatement): void {
    this.edits.push({ start: st.start, end: st.end, text: '' });
  }
}

/** Applies edits in source order; an edit inside a removed range is dropped, overlapping removals merge. */
function splice(sql: string, edits: Edit[]): string {
  if (edits.length === 0) return sql;
  edits.sort((a, b) => a.start - b.start || b.end - a.end);
  // The pieces are joined once: one flat string, not a chain of concatenations per edit.
  const pieces: string[] = [];
  let cursor = 0;
  for (const edit of edits) {
    if (edit.start < cursor) {
      if (edit.text === '' && edit.end > cursor) cursor = edit.end;
      continue;
    }
    pieces.push(sql.slice(cursor, edit.start), edit.text);
    cursor = edit.end;
  }
  pieces.push(sql.slice(cursor));
  return pieces.join('');
}
