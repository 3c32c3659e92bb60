// JSON codec: documents of customer records (an object, or an array of them, spaced or not),
// damaged ones and raw hostile text, through the engine (documents.ts holds the invariants).

import type { FuzzTarget } from '../harness.ts';
import { checkDocument, documentArb, type DocumentInput, type Row } from './documents.ts';

function writeJson(rows: readonly Row[]): string {
  const objects = rows.map((row) => Object.fromEntries(row.map((f) => [f.name, f.name === 'salary' ? Number(f.value) : f.value])));
  const doc = objects.length === 1 ? objects[0] : { customers: objects, meta: { count: objects.length, at: null, ok: true } };
  return JSON.stringify(doc, null, rows.length % 2 === 0 ? 2 : undefined);
}

export const jsonTarget: FuzzTarget<DocumentInput> = {
  name: 'json',
  covers: 'JSON codec (src/formats/json) through the engine: Mask, Pseudonymise→Reconstruct, Encrypt→Decrypt',
  arbitrary: documentArb(writeJson),
  check: (input) => checkDocument('JSON', input),
  cost: 5,
};

export default jsonTarget;
