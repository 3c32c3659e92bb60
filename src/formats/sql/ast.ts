// Reading node-sql-parser's trees, whose shapes vary by dialect: literals, column names and
// comparison operators, shared by the statement reader and the binding analysis.

import type { SqlDialect } from './dialects.ts';

export const SYMMETRIC_OPS = new Set(['=', '==', '!=', '<>', '<', '>', '<=', '>=', '<=>']);
export const AST_COMPARISON_OPS = new Set(['=', '==', '!=', '<>', '<', '>', '<=', '>=', '<=>', 'LIKE', 'NOT LIKE', 'ILIKE', 'NOT ILIKE', 'IN', 'NOT IN', 'BETWEEN', 'NOT BETWEEN']);

const AST_STRING_TYPES = new Set([
  'single_quote_string',
  'natural_string',
  'var_string',
  'string',
  'regex_string',
  'hex_string',
  'full_hex_string',
  'bit_string',
  'date',
  'time',
  'timestamp',
  'datetime',
]);

/** The node as a plain object, or undefined. */
export function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A column name from the tree's many shapes: 'a', {value:'a'}, {column:'a'}, {column:{expr:{value:'a'}}}. */
export function columnNameOf(node: unknown): string | undefined {
  if (typeof node === 'string') return node;
  const r = record(node);
  if (r === undefined) return undefined;
  if (typeof r.column === 'string') return r.column;
  if (r.column !== undefined) return columnNameOf(r.column);
  if (r.expr !== undefined) return columnNameOf(r.expr);
  if (typeof r.value === 'string') return r.value;
  return undefined;
}

/** The tree's literal as a key comparable with tokenLiteralKey; undefined when not a plain literal. */
export function astLiteralKey(node: unknown, dialect: SqlDialect): string | undefined {
  const r = record(node);
  if (r === undefined || typeof r.type !== 'string') return undefined;
  const type = r.type;
  if (type === 'null') return 'null';
  if (type === 'bool' || type === 'boolean') return 'bool:' + String(r.value).toUpperCase();
  if (type === 'number' || type === 'bigint') return 'n:' + String(Number(r.value));
  if (type === 'double_quote_string') return dialect.doubleQuoteIsString ? 's' : undefined;
  if (AST_STRING_TYPES.has(type)) return 's';
  // PostgreSQL E'…' and $$…$$ come back in odd shapes.
  if (type === 'default' && typeof r.value === 'string' && /^[eE]'/.test(r.value)) return 's';
  if (type === 'var' && typeof r.prefix === 'string' && r.prefix.startsWith('$')) return 's';
  return undefined;
}

/** A column side of a comparison in the tree: a column_ref, or "x" where "…" quotes identifiers. */
export function astColumn(node: unknown, dialect: SqlDialect): { column: string; qualifier: string | undefined } | undefined {
  const r = record(node);
  if (r === undefined) return undefined;
  if (r.type === 'column_ref') {
    const column = columnNameOf(r.column);
    if (column === undefined || column === '*') return undefined;
    return { column, qualifier: typeof r.table === 'string' ? r.table : undefined };
  }
  if (r.type === 'double_quote_string' && !dialect.doubleQuoteIsString && typeof r.value === 'string') {
    return { column: r.value, qualifier: undefined };
  }
  return undefined;
}
