// Lays a (protected) JSON document out as one table for CSV output: one row per element of a
// top-level array (one row for anything else), columns named by dotted paths in first-seen order.

import { DpgError } from '../../core/errors.ts';
import type { FlatTable, Flattener } from '../codec.ts';
import { JsonText, ScalarKind } from './text.ts';

export interface FlattenLimits {
  /** Distinct column paths in one table (default 100,000); more is PAYLOAD_TOO_LARGE. */
  readonly maxColumns?: number;
  /** Nesting depth of containers (default 512); deeper is MALFORMED_DATA_SET. */
  readonly maxDepth?: number;
}

export const DEFAULT_FLATTEN_LIMITS = { maxColumns: 100_000, maxDepth: 512 } as const;

/** Column name given to a row whose element is a scalar (or an empty path). */
export const SCALAR_COLUMN = 'value';

/** A row under construction: cell text by column index; unset indices are missing cells. */
export type SparseRow = string[];

/** The union of column paths, in first-seen order. */
export class ColumnSet {
  readonly names: string[] = [];
  private readonly indexByName = new Map<string, number>();
  private readonly maxColumns: number;

  constructor(maxColumns: number = DEFAULT_FLATTEN_LIMITS.maxColumns) {
    this.maxColumns = maxColumns;
  }

  indexOf(name: string): number {
    let index = this.indexByName.get(name);
    if (index === undefined) {
      if (this.names.length >= this.maxColumns) {
        throw new DpgError('PAYLOAD_TOO_LARGE', `Flattened JSON has more than ${this.maxColumns} columns`);
      }
      index = this.names.length;
      this.names.push(name);
      this.indexByName.set(name, index);
    }
    return index;
  }
}

/**
 * Flattens one row's value. Paths: object keys joined with `.`, array indices as numbers
 * (`items.0.sku`); a key that is empty or holds `.`, `[`, `]` or `"` is written as `["a.b"]` so
 * that no two leaves share a column. Strings are written raw, numbers and booleans as JSON text,
 * null as an empty cell, empty objects and arrays as `{}` and `[]`.
 */
export function flattenRow(value: unknown, columns: ColumnSet, maxDepth: number = DEFAULT_FLATTEN_LIMITS.maxDepth): SparseRow {
  const row: SparseRow = [];
  flattenInto(value, '', row, columns, maxDepth, 0);
  return row;
}

function flattenInto(value: unknown, path: string, row: SparseRow, columns: ColumnSet, maxDepth: number, depth: number): void {
  if (value !== null && typeof value === 'object') {
    if (depth >= maxDepth) {
      throw new DpgError('MALFORMED_DATA_SET', `JSON nesting deeper than ${maxDepth} levels cannot be flattened`);
    }
    if (Array.isArray(value)) {
      if (value.length === 0) {
        row[columns.indexOf(path || SCALAR_COLUMN)] = '[]';
        return;
      }
      for (let i = 0; i < value.length; i++) {
        flattenInto(value[i], path === '' ? String(i) : `${path}.${i}`, row, columns, maxDepth, depth + 1);
      }
      return;
    }
    // Own enumerable keys only; `__proto__` parsed by JSON.parse is an ordinary own key here.
    const keys = Object.keys(value);
    if (keys.length === 0) {
      row[columns.indexOf(path || SCALAR_COLUMN)] = '{}';
      return;
    }
    for (const key of keys) {
      flattenInto((value as Record<string, unknown>)[key], joinKey(path, key), row, columns, maxDepth, depth + 1);
    }
    return;
  }
  row[columns.indexOf(path || SCALAR_COLUMN)] = scalarText(value);
}

/**
 * Flattens one row from JSON text, like flattenRow, but numbers keep the digits they were written
 * with (`12345678901234567890` stays so; a parsed value would round it) and keys their document
 * order. Duplicate keys write the same column, the last one winning, as a parser would.
 */
export function flattenTextRow(text: string, columns: ColumnSet, maxDepth: number = DEFAULT_FLATTEN_LIMITS.maxDepth, what = 'JSON'): SparseRow {
  const row: SparseRow = [];
  const reader = new JsonText(text, { maxDepth: Number.MAX_SAFE_INTEGER }, what);
  reader.end(flattenTextInto(reader, reader.start(), '', row, columns, maxDepth, 0));
  return row;
}

function flattenTextInto(reader: JsonText, p: number, path: string, row: SparseRow, columns: ColumnSet, maxDepth: number, depth: number): number {
  const c = reader.text.charCodeAt(p);
  if (c === 0x7b || c === 0x5b) {
    if (depth >= maxDepth) {
      throw new DpgError('MALFORMED_DATA_SET', `JSON nesting deeper than ${maxDepth} levels cannot be flattened`);
    }
    const closer = c === 0x7b ? 0x7d : 0x5d;
    let q = reader.ws(p + 1);
    if (reader.text.charCodeAt(q) === closer) {
      row[columns.indexOf(path || SCALAR_COLUMN)] = c === 0x7b ? '{}' : '[]';
      return q + 1;
    }
    for (let i = 0; ; i++) {
      if (c === 0x7b) {
        const keyEnd = reader.memberName(q);
        const key = reader.stringValue(q, keyEnd, reader.hadEscape);
        q = flattenTextInto(reader, reader.memberValue(keyEnd), joinKey(path, key), row, columns, maxDepth, depth + 1);
      } else {
        q = flattenTextInto(reader, q, path === '' ? String(i) : `${path}.${i}`, row, columns, maxDepth, depth + 1);
      }
      q = reader.separator(q, closer);
      if (q < 0) return ~q;
    }
  }
  const end = reader.scalarEnd(p);
  const kind = reader.kind;
  row[columns.indexOf(path || SCALAR_COLUMN)] =
    kind === ScalarKind.String ? reader.stringValue(p, end, reader.hadEscape) : kind === ScalarKind.Null ? '' : reader.text.slice(p, end);
  return end;
}

const NEEDS_BRACKETS = /[.[\]"]/;

function joinKey(path: string, key: string): string {
  if (key === '' || NEEDS_BRACKETS.test(key)) return `${path}[${JSON.stringify(key)}]`;
  return path === '' ? key : `${path}.${key}`;
}

function scalarText(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    default:
      return ''; // null (and undefined, which JSON cannot hold)
  }
}

/** A complete row: every column present, missing cells empty. */
export function denseRow(row: SparseRow, width: number): string[] {
  const dense = new Array<string>(width);
  for (let i = 0; i < width; i++) dense[i] = row[i] ?? '';
  return dense;
}

/** The in-memory flattener with its own limits (`flattenJson` uses the defaults). */
export function createJsonFlattener(limits: FlattenLimits = {}): Flattener {
  const maxDepth = limits.maxDepth ?? DEFAULT_FLATTEN_LIMITS.maxDepth;
  const maxColumns = limits.maxColumns ?? DEFAULT_FLATTEN_LIMITS.maxColumns;
  return (document) => {
    const columns = new ColumnSet(maxColumns);
    const sparse = typeof document === 'string' ? flattenTextRows(stripBom(document), columns, maxDepth) : flattenValueRows(document, columns, maxDepth);
    const width = columns.names.length;
    const rows: Iterable<string[]> = { *[Symbol.iterator]() { for (const row of sparse) yield denseRow(row, width); } };
    return { columns: columns.names, rows } satisfies FlatTable;
  };
}

function flattenValueRows(value: unknown, columns: ColumnSet, maxDepth: number): SparseRow[] {
  return Array.isArray(value) ? value.map((element) => flattenRow(element, columns, maxDepth)) : [flattenRow(value, columns, maxDepth)];
}

/** A top-level array gives one row per element, anything else one row; numbers keep their text. */
function flattenTextRows(text: string, columns: ColumnSet, maxDepth: number): SparseRow[] {
  const reader = new JsonText(text, { maxDepth: Number.MAX_SAFE_INTEGER }, 'JSON data set');
  const p = reader.start();
  if (text.charCodeAt(p) !== 0x5b) return [flattenTextRow(text, columns, maxDepth, 'JSON data set')];
  const rows: SparseRow[] = [];
  let q = reader.ws(p + 1);
  if (text.charCodeAt(q) === 0x5d) q++;
  else {
    for (;;) {
      const row: SparseRow = [];
      q = reader.separator(flattenTextInto(reader, q, '', row, columns, maxDepth, 0), 0x5d);
      rows.push(row);
      if (q < 0) break;
    }
    q = ~q;
  }
  reader.end(q);
  return rows;
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Flattens an in-memory protected JSON document (parsed value or JSON text). */
export const flattenJson: Flattener = createJsonFlattener();
