// Which work leaves the event loop. A document's cost is its length weighted by how slow its data
// type is per byte; above limits.workers.inlineBytes it goes to a protection worker. The weights are
// measured (docs/performance.md, "Head of line"): per MB, Mask costs ~140 ms as JSON, ~180 ms as
// XML and several seconds as SQL (a full parse per statement), so SQL counts ten-fold.

import type { DataSetType } from '../core/types.ts';

const WEIGHT: Readonly<Record<DataSetType, number>> = { JSON: 1, XML: 1.5, LIST: 1, SQL: 10 };

/** The weighted size of a document; a parsed (non-text) JSON value is never offloaded: 0. */
export function documentCost(type: DataSetType, dataSet: unknown): number {
  return typeof dataSet === 'string' ? dataSet.length * (WEIGHT[type] ?? 1) : 0;
}

/** The weighted size of a gRPC table: the characters of its cells (each is a value or a JSON document). */
export function rowsCost(rows: readonly (readonly string[])[]): number {
  let n = 0;
  for (const row of rows) for (const cell of row) n += cell.length;
  return n;
}
