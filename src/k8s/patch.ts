// The JSON Patch between a pod as sent and as injected. rfc6902 finds the minimal operations; two
// refinements: a container or volume that injection owns (dpg-*) is replaced whole rather than
// edited field by field (an upgrade's patch and `dpg inject`'s output show whole new entries), and
// lists that injection only prepends to or appends to (init containers, volumes, env, mounts) are
// answered with plain `add`s without rfc6902's edit-distance search, which was most of the
// webhook's time per review (bench/webhook.bench.ts).

import { createPatch, type Operation } from 'rfc6902';
import { RESERVED_CONTAINER_NAMES, RESERVED_VOLUME_NAMES } from './names.ts';

const OWNED = new Set([...RESERVED_CONTAINER_NAMES, ...RESERVED_VOLUME_NAMES]);

function owned(value: unknown): boolean {
  return typeof value === 'object' && value !== null && OWNED.has((value as { name?: unknown }).name as string);
}

const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);

/** `add`s when `b` is `a` with elements put in front and/or after; undefined otherwise. */
function insertions(a: unknown[], b: unknown[], path: string): Operation[] | undefined {
  if (b.length < a.length) return undefined;
  const keys = b.map((x) => JSON.stringify(x));
  const target = a.map((x) => JSON.stringify(x));
  for (let front = 0; front + a.length <= b.length; front++) {
    if (target.every((k, i) => keys[front + i] === k)) {
      const ops: Operation[] = [];
      for (let i = 0; i < front; i++) ops.push({ op: 'add', path: `${path}/${i}`, value: b[i] });
      for (let i = front + a.length; i < b.length; i++) ops.push({ op: 'add', path: `${path}/${i}`, value: b[i] });
      return ops;
    }
  }
  return undefined;
}

export function podPatch(input: unknown, output: unknown): Operation[] {
  return createPatch(input, output, (a: unknown, b: unknown, ptr: { tokens: string[]; toString(): string }) => {
    const last = ptr.tokens[ptr.tokens.length - 1];
    if (/^\d+$/.test(last ?? '') && (owned(a) || owned(b)) && !same(a, b)) {
      return [{ op: 'replace', path: ptr.toString(), value: b }];
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      if (a.length === b.length && same(a, b)) return [];
      return insertions(a, b, ptr.toString());
    }
    return undefined;
  });
}
