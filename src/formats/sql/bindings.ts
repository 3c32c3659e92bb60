// Finds, in a statement's tree, the values that reach a column other than as one literal the token
// reading can replace: expressions compared with a column, SELECT lists named after a column (aliases,
// WITH and derived-table column lists, UNION arms, subqueries compared with a column), and the columns
// such values read. The codec refuses the ones that carry literals into a protected column.

import { astColumn, astLiteralKey, AST_COMPARISON_OPS, columnNameOf, record, SYMMETRIC_OPS } from './ast.ts';
import type { SqlDialect } from './dialects.ts';
import type { SqlAst } from './parser.ts';

/** One value bound to columns by the statement's structure. */
export interface SqlBinding {
  /** Columns the value lands in or is compared with; '*' when the column cannot be known. */
  readonly columns: readonly string[];
  /** Table or alias written before the column (comparisons only). */
  readonly qualifier: string | undefined;
  /** The value carries a string or number literal that no token slot protects. */
  readonly literal: boolean;
  /** Lower-cased names of the columns the value reads ('*' for a star): a protected value taints them. */
  readonly reads: readonly string[];
  /** The construct, for error messages ("a derived table"). */
  readonly construct: string;
  /** The value is stored in (copied into) its columns, not only compared with them. */
  readonly copies: boolean;
}

interface SelectContext {
  /** Output names by position (WITH or derived-table column lists, INSERT columns). */
  readonly names: readonly (string | undefined)[] | undefined;
  /** Columns every output of the query is bound to (a subquery compared with a column). */
  readonly boundTo: readonly string[];
  /** The SELECT list is already bound by the token reading (INSERT … SELECT): its literals are handled there. */
  readonly tokenBound: boolean;
  readonly construct: string;
}

const MAX_DEPTH = 400;
/** The column name of a query output that has none we can know (see bind). */
export const UNNAMED = '\u0000unnamed';

/** Every binding in one statement's tree, subqueries included. */
export function collectBindings(ast: SqlAst, dialect: SqlDialect): SqlBinding[] {
  return new BindingCollector(dialect).collect(ast);
}

class BindingCollector {
  private readonly out: SqlBinding[] = [];
  private readonly contexts = new Map<object, SelectContext>();
  private readonly visitedArms = new Set<object>();

  constructor(private readonly dialect: SqlDialect) {}

  collect(ast: SqlAst): SqlBinding[] {
    if (ast.type === 'insert' || ast.type === 'replace') {
      const query = queryOf(ast.values);
      if (query !== undefined && query.type === 'select') {
        const columns = Array.isArray(ast.columns) ? ast.columns.map(columnNameOf) : [];
        this.contexts.set(query, {
          names: columns.length > 0 ? columns : undefined,
          // Without a column list the target columns are unknown: assume any may be protected.
          boundTo: columns.length > 0 ? [] : ['*'],
          tokenBound: true,
          construct: 'an INSERT … SELECT list',
        });
      }
    }
    const setLists = [ast.set, record(ast.on_duplicate_update)?.set, record(record(record(ast.conflict)?.action)?.expr)?.set];
    for (const list of setLists) {
      if (!Array.isArray(list)) continue;
      for (const entry of list) {
        const column = columnNameOf(entry);
        if (column === undefined) continue;
        // The literals of a SET value are handled on the tokens; what it reads still matters (UPDATE … FROM).
        this.out.push({ columns: [column], qualifier: undefined, literal: false, reads: this.reads(record(entry)?.value), construct: 'a SET list', copies: true });
      }
    }
    this.walk(ast, 0);
    return this.out;
  }

  private walk(node: unknown, depth: number): void {
    if (depth > MAX_DEPTH || node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const child of node) this.walk(child, depth + 1);
      return;
    }
    const r = node as Record<string, unknown>;
    this.nameNestedQueries(r);
    if (r.type === 'select' && !this.visitedArms.has(r)) this.select(r, this.contexts.get(r));
    else if (r.type === 'values' && this.contexts.has(r)) this.values(r, this.contexts.get(r)!);
    else if (r.type === 'binary_expr' && typeof r.operator === 'string' && AST_COMPARISON_OPS.has(r.operator.toUpperCase())) this.comparison(r);
    for (const key of Object.keys(r)) {
      if (key !== 'loc') this.walk(r[key], depth + 1);
    }
  }

  /** WITH c(a, b) AS (…) and FROM (…) AS x(a, b) name their query's outputs. */
  private nameNestedQueries(r: Record<string, unknown>): void {
    if (Array.isArray(r.with)) {
      for (const entry of r.with) {
        const e = record(entry);
        const query = queryOf(e?.stmt);
        if (query === undefined || this.contexts.has(query)) continue;
        const names = Array.isArray(e!.columns) ? e!.columns.map(columnNameOf) : undefined;
        this.contexts.set(query, { names, boundTo: [], tokenBound: false, construct: 'a WITH query' });
      }
    }
    if (Array.isArray(r.from)) {
      for (const entry of r.from) {
        const e = record(entry);
        const query = queryOf(e?.expr);
        if (query === undefined && e !== undefined && e.expr !== undefined && this.containsLiteral(e.expr)) {
          // A table-valued function over literals (unnest(ARRAY['…']), json_table('…')): its rows are literal data.
          this.out.push({ columns: [UNNAMED], qualifier: undefined, literal: true, reads: [], construct: 'a table function over literals', copies: true });
        }
        if (query === undefined || this.contexts.has(query)) continue;
        this.contexts.set(query, { names: derivedColumnNames(e!.as), boundTo: [], tokenBound: false, construct: 'a derived table' });
      }
    }
  }

  /** A SELECT and its UNION/EXCEPT/INTERSECT arms: position k of every arm is named by the first arm. */
  private select(first: Record<string, unknown>, context: SelectContext | undefined): void {
    const firstItems = Array.isArray(first.columns) ? first.columns : [];
    const names = firstItems.map((item, k) => context?.names?.[k] ?? outputName(item));
    const boundTo = context?.boundTo ?? [];
    for (let arm: Record<string, unknown> | undefined = first; arm !== undefined; arm = record(arm._next)) {
      this.visitedArms.add(arm);
      if (!Array.isArray(arm.columns)) continue;
      arm.columns.forEach((item, k) => {
        const expr = record(item)?.expr ?? item;
        this.bind(names[k], boundTo, expr, context?.tokenBound === true, context?.construct ?? 'a SELECT list');
      });
    }
  }

  /** VALUES rows used as a query (WITH c(a) AS (VALUES …), FROM (VALUES …) AS v(a)). */
  private values(r: Record<string, unknown>, context: SelectContext): void {
    if (!Array.isArray(r.values)) return;
    for (const row of r.values) {
      const items = record(row)?.value;
      if (!Array.isArray(items)) continue;
      items.forEach((item, k) => this.bind(context.names?.[k], context.boundTo, item, context.tokenBound, context.construct));
    }
  }

  private bind(name: string | undefined, boundTo: readonly string[], expr: unknown, tokenBound: boolean, construct: string): void {
    // An output without a name of ours still has one on the server (`?column?`, `column1`, the literal's
    // own text, a position for `*`): UNNAMED stands for it, and matches whatever a protected value reads.
    const columns = name === undefined ? [UNNAMED, ...boundTo] : [name, ...boundTo];
    const copies = construct !== 'a subquery compared with it';
    this.out.push({ columns, qualifier: undefined, literal: !tokenBound && this.containsLiteral(expr), reads: this.reads(expr), construct, copies });
  }

  private comparison(r: Record<string, unknown>): void {
    const op = String(r.operator);
    const left = astColumn(r.left, this.dialect);
    const right = astColumn(r.right, this.dialect);
    if (left !== undefined) {
      this.operand(r.right, left);
      return;
    }
    if (right !== undefined && SYMMETRIC_OPS.has(op)) {
      this.operand(r.left, right);
      return;
    }
    // An expression over columns compared with literals (LOWER(email) = '…'): the literal is the column's data.
    const sides: [unknown, unknown][] = SYMMETRIC_OPS.has(op) ? [[r.left, r.right], [r.right, r.left]] : [[r.left, r.right]];
    for (const [side, other] of sides) {
      if (queryOf(side) !== undefined) continue;
      const columns = this.reads(side).filter((c) => c !== '*');
      if (columns.length > 0 && this.containsLiteral(other)) {
        this.out.push({ columns, qualifier: undefined, literal: true, reads: [], construct: 'an expression over it compared with literals', copies: false });
      }
    }
  }

  /** The value side of `column op value`. */
  private operand(node: unknown, column: { column: string; qualifier: string | undefined }): void {
    const r = record(node);
    if (r === undefined || this.isPlain(r)) return;
    const query = queryOf(r);
    if (query !== undefined) {
      if (!this.contexts.has(query)) {
        this.contexts.set(query, { names: undefined, boundTo: [column.column], tokenBound: false, construct: 'a subquery compared with it' });
      }
      return;
    }
    if (r.type === 'expr_list' && Array.isArray(r.value)) {
      for (const item of r.value) this.operand(item, column);
      return;
    }
    this.out.push({ columns: [column.column], qualifier: column.qualifier, literal: this.containsLiteral(r), reads: this.reads(r), construct: 'an expression compared with it', copies: false });
  }

  /** A value the token reading binds (a literal, `'x'::type`) or that holds no data (column, parameter, NULL). */
  private isPlain(r: Record<string, unknown>): boolean {
    if (astLiteralKey(r, this.dialect) !== undefined) return true;
    // A lone variable is bound on the tokens, where its assignments are protected (codec.ts).
    if (isUserVariable(r)) return true;
    if (r.type === 'column_ref' || r.type === 'param' || r.type === 'origin' || r.type === 'var') return !this.containsLiteral(r);
    if (r.type === 'cast' && r.symbol === '::') {
      const inner = record(r.expr);
      return inner !== undefined && this.isPlain(inner);
    }
    return astColumn(r, this.dialect) !== undefined;
  }

  /** A string or number literal anywhere below (NULL and booleans carry no data; parameters are not literals). */
  private containsLiteral(node: unknown, depth = 0): boolean {
    if (depth > MAX_DEPTH || node === null || typeof node !== 'object') return false;
    if (Array.isArray(node)) return node.some((child) => this.containsLiteral(child, depth + 1));
    const r = node as Record<string, unknown>;
    if (r.type === 'var' && typeof r.name === 'number') return false;
    // A session or script variable may hold a literal from anywhere in the script (or an earlier one).
    if (isUserVariable(r)) return true;
    const key = astLiteralKey(r, this.dialect);
    if (key !== undefined && key !== 'null' && !key.startsWith('bool:')) return true;
    for (const k of Object.keys(r)) {
      if (k !== 'loc' && this.containsLiteral(r[k], depth + 1)) return true;
    }
    return false;
  }

  /** Lower-cased names of every column the node reads. */
  private reads(node: unknown): string[] {
    const found = new Set<string>();
    const visit = (n: unknown, depth: number): void => {
      if (depth > MAX_DEPTH || n === null || typeof n !== 'object') return;
      if (Array.isArray(n)) {
        for (const child of n) visit(child, depth + 1);
        return;
      }
      const r = n as Record<string, unknown>;
      if (r.type === 'column_ref') {
        const name = columnNameOf(r.column);
        if (name !== undefined) found.add(name.toLowerCase());
        return;
      }
      const quoted = astColumn(r, this.dialect);
      if (quoted !== undefined) found.add(quoted.column.toLowerCase());
      for (const k of Object.keys(r)) if (k !== 'loc') visit(r[k], depth + 1);
    };
    visit(node, 0);
    return [...found];
  }
}

/** `@n` (MySQL's var, T-SQL's column_ref named @n) or Snowflake's `$n`; not `@@system` variables. */
function isUserVariable(r: Record<string, unknown>): boolean {
  if (r.type === 'var' && typeof r.name === 'string') {
    const prefix = typeof r.prefix === 'string' ? r.prefix : '';
    return prefix === '@' || (prefix === '$' && /^[A-Za-z_]/.test(r.name));
  }
  return r.type === 'column_ref' && typeof r.column === 'string' && /^@[^@]/.test(r.column);
}

/** The query a node holds: a SELECT or VALUES itself, or the {ast} wrapper subqueries come in. */
function queryOf(node: unknown): Record<string, unknown> | undefined {
  const r = record(node);
  if (r === undefined) return undefined;
  if (r.type === 'select' || r.type === 'values') return r;
  const inner = record(r.ast);
  return inner !== undefined && (inner.type === 'select' || inner.type === 'values') ? inner : undefined;
}

/** A SELECT item's output name: its alias, or the column it reads. */
function outputName(item: unknown): string | undefined {
  const r = record(item);
  if (r === undefined) return undefined;
  if (typeof r.as === 'string') return r.as;
  const alias = record(r.as);
  if (alias !== undefined) return columnNameOf(alias);
  const expr = record(r.expr);
  if (expr?.type === 'column_ref') {
    const name = columnNameOf(expr.column);
    return name === '*' ? undefined : name;
  }
  return undefined;
}

/** `x(a, b)` → ['a', 'b'], as the parser leaves a derived table's alias with a column list. */
function derivedColumnNames(alias: unknown): string[] | undefined {
  if (typeof alias !== 'string') return undefined;
  const open = alias.indexOf('(');
  if (open === -1 || !alias.endsWith(')')) return undefined;
  return alias
    .slice(open + 1, -1)
    .split(',')
    .map((name) => name.trim().replace(/^[`"[]|[`"\]]$/g, ''));
}
