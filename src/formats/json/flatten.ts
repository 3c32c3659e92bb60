// Lays a (protected) JSON document out as one table for CSV output: one row per element of a
// top-level array (one row for anything else), columns named by dotted paths in first-seen order.

import { DpgError } from '../../core/errors.ts';
import type { FlatTable, Flattener } from '../codec.ts';

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

/** Parses JSON text, reporting only a position on failure (engine messages may quote input). */
export function parseJsonText(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const position = /position (\d+)/.exec(err instanceof Error ? err.message : '')?.[1];
    throw new DpgError(
      'MALFORMED_DATA_SET',
      position === undefined ? `${what} does not parse as JSON` : `${what} does not parse as JSON at position ${position}`,
    );
  }
}

/** The in-memory flattener with its own limits (`flattenJson` uses the defaults). */
export function createJsonFlattener(limits: FlattenLimits = {}): Flattener {
  const maxDepth = limits.maxDepth ?? DEFAULT_FLATTEN_LIMITS.maxDepth;
  const maxColumns = limits.maxColumns ?? DEFAULT_FLATTEN_LIMITS.maxColumns;
  return (document) => {
    const value = typeof document === 'string' ? parseJsonText(stripBom(document), 'JSON data set') : document;
    const columns = new ColumnSet(maxColumns);
    const sparse = Array.isArray(value) ? value.map((element) => flattenRow(element, columns, maxDepth)) : [flattenRow(value, columns, maxDepth)];
    const width = columns.names.length;
    const rows: Iterable<string[]> = { *[Symbol.iterator]() { for (const row of sparse) yield denseRow(row, width); } };
    return { columns: columns.names, rows } satisfies FlatTable;
  };
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Flattens an in-memory protected JSON document (parsed value or JSON text). */
export const flattenJson: Flattener = createJsonFlattener();
