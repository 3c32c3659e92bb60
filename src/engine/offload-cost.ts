// Which work leaves the event loop. A document's cost is its length weighted by how slow its data
// type is per byte; above limits.workers.inlineBytes it goes to a protection worker. The weights are
// measured (docs/operations.md#workers): Mask costs ~0.04–0.3 ms per KiB as JSON or XML but
// 2–20 ms per KiB as SQL (node-sql-parser parses every statement; small scripts cost the most per
// byte), so SQL counts 32-fold: any script above 1 KiB goes to a worker with the default inlineBytes.

import type { DataSetType } from '../core/types.ts';

const WEIGHT: Readonly<Record<DataSetType, number>> = { JSON: 1, XML: 1.5, LIST: 1, SQL: 32 };

/** The weighted size of a document; a parsed (non-text) JSON value is never offloaded: 0. */
export function documentCost(type: DataSetType, dataSet: unknown): number {
  return typeof dataSet === 'string' ? dataSet.length * (WEIGHT[type] ?? 1) : 0;
}

/**
 * The weighted size of a body of `byteLength` bytes declared (by header or route) as `type`: what
 * decides, before a byte of it is parsed, whether the body goes to a worker.
 */
export function bytesCost(type: DataSetType, byteLength: number): number {
  return byteLength * (WEIGHT[type] ?? 1);
}

/** The weighted size of a gRPC table: the characters of its cells (each is a value or a JSON document). */
export function rowsCost(rows: readonly (readonly string[])[]): number {
  let n = 0;
  for (const row of rows) for (const cell of row) n += cell.length;
  return n;
}
