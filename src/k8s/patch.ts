// The JSON Patch between a pod as sent and as injected. rfc6902 finds the minimal operations; one
// refinement: a container or volume that injection owns (dpg-*) is replaced whole rather than
// edited field by field, so an upgrade's patch (and `dpg inject`'s output) shows whole new entries.

import { createPatch, type Operation } from 'rfc6902';
import { RESERVED_CONTAINER_NAMES, RESERVED_VOLUME_NAMES } from './names.ts';

const OWNED = new Set([...RESERVED_CONTAINER_NAMES, ...RESERVED_VOLUME_NAMES]);

function owned(value: unknown): boolean {
  return typeof value === 'object' && value !== null && OWNED.has((value as { name?: unknown }).name as string);
}

export function podPatch(input: unknown, output: unknown): Operation[] {
  return createPatch(input, output, (a: unknown, b: unknown, ptr: { tokens: string[]; toString(): string }) => {
    const last = ptr.tokens[ptr.tokens.length - 1];
    if (/^\d+$/.test(last ?? '') && (owned(a) || owned(b)) && JSON.stringify(a) !== JSON.stringify(b)) {
      return [{ op: 'replace', path: ptr.toString(), value: b }];
    }
    return undefined;
  });
}
