// The JSON Patch between a pod as sent and as injected. rfc6902 finds the minimal operations; two
// refinements: a container or volume that injection owns (dpg-*) is replaced whole rather than
// edited field by field (an upgrade's patch and `dpg inject`'s output show whole new entries), and
// lists are patched in time linear in their length (listPatch): element by element, then plain
// `add`s for what injection puts in front or after, without rfc6902's edit-distance search, which
// was most of the webhook's time per review (bench/webhook.bench.ts) and failed on large Lists.

import { createPatch, type Operation } from 'rfc6902';
import { RESERVED_CONTAINER_NAMES, RESERVED_VOLUME_NAMES } from './names.ts';

const OWNED = new Set([...RESERVED_CONTAINER_NAMES, ...RESERVED_VOLUME_NAMES]);

function owned(value: unknown): boolean {
  return typeof value === 'object' && value !== null && OWNED.has((value as { name?: unknown }).name as string);
}

const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);

/** What identifies a list element across injection: its `name` (containers, volumes, env, mounts), else its content. */
function identity(value: unknown): string {
  if (typeof value === 'object' && value !== null && typeof (value as { name?: unknown }).name === 'string') return `name:${(value as { name: string }).name}`;
  return `json:${JSON.stringify(value)}`;
}

/** The patch of one list element, paths under `path`: a dpg-owned element is replaced whole. */
function elementPatch(a: unknown, b: unknown, path: string): Operation[] {
  if (same(a, b)) return [];
  if (owned(a) || owned(b)) return [{ op: 'replace', path, value: b }];
  return podPatch(a, b).map((op) => ({ ...op, path: `${path}${op.path}` }) as Operation);
}

/**
 * The patch of a list, linear in its length: equal lengths are diffed element by element (a List of
 * 3,000 Deployments, or a pod's 400 containers each given a mount, never meets rfc6902's
 * edit-distance search, which is quadratic in time and memory: issue 16 class 14). A longer `b`
 * that is `a` with elements put in front and/or after, each kept element identified by its name (or
 * content), is the edits of the kept elements at their own indexes, then the `add`s. Undefined for
 * anything else (rfc6902 then finds the operations).
 */
function listPatch(a: unknown[], b: unknown[], path: string): Operation[] | undefined {
  if (a.length === b.length) return a.flatMap((x, i) => elementPatch(x, b[i], `${path}/${i}`));
  if (b.length < a.length) return undefined;
  const keys = b.map(identity);
  const target = a.map(identity);
  for (let front = 0; front + a.length <= b.length; front++) {
    if (target.every((k, i) => keys[front + i] === k)) {
      // Edits first, at the indexes they have before anything is added; then the adds, in order.
      const ops: Operation[] = a.flatMap((x, i) => elementPatch(x, b[front + i], `${path}/${i}`));
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
    if (Array.isArray(a) && Array.isArray(b)) return listPatch(a, b, ptr.toString());
    return undefined;
  });
}
