// Applies a JSON Patch (add/remove/replace, as rfc6902's createPatch emits) to a `yaml` Document in
// place, so the nodes injection does not touch keep their comments, order and style.

import { isMap, isSeq, type Document, type Node as YamlNode } from 'yaml';
import type { Operation } from 'rfc6902';

function segments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The collection node at a path; throws when the path crosses an alias or a scalar. */
function collectionAt(doc: Document, path: string[]): YamlNode {
  const node = path.length === 0 ? doc.contents : doc.getIn(path, true);
  if (!isMap(node) && !isSeq(node)) throw new Error(`no collection at /${path.join('/')}`);
  return node;
}

/** Applies the patch; throws (leaving a partly changed document) when the AST cannot take it. */
export function applyPatchToDocument(doc: Document, patch: readonly Operation[]): void {
  for (const op of patch) {
    const path = segments(op.path);
    const key = path.pop();
    if (key === undefined) throw new Error('a patch of the whole document');
    const parent = collectionAt(doc, path);
    if (op.op === 'add' || op.op === 'replace') {
      const value = doc.createNode(op.value);
      if (isSeq(parent)) {
        const index = key === '-' ? parent.items.length : Number(key);
        if (!Number.isInteger(index) || index < 0 || index > parent.items.length) throw new Error(`bad index ${key}`);
        if (op.op === 'add') parent.items.splice(index, 0, value);
        else parent.items[index] = value;
      } else if (isMap(parent)) {
        parent.set(key, value);
      }
    } else if (op.op === 'remove') {
      if (isSeq(parent)) parent.items.splice(Number(key), 1);
      else if (isMap(parent)) parent.delete(key);
    } else {
      throw new Error(`unsupported patch operation ${op.op}`);
    }
  }
}
