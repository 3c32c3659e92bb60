// A tiny FieldKeys stand-in for technique tests: keys derived from fixed bytes by HMAC, cached so
// the same purpose returns the same Uint8Array (as the real keyring does), two key versions.

import { createHmac } from 'node:crypto';
import type { Scalar } from '../../src/core/types.ts';
import { techniqueFor } from '../../src/techniques/registry.ts';
import { ValueError, type BindContext, type BoundTechnique, type FieldKeys, type KeyMaterial } from '../../src/techniques/technique.ts';
import type { ForwardJobType } from '../../src/core/types.ts';

const MASTERS: Record<number, Buffer> = {
  1: Buffer.alloc(32, 0x11),
  2: Buffer.alloc(32, 0x22),
};

export function fakeKeys(scope = 'tp=1;du=7', activeVersion = 1, kid = 'test-key'): FieldKeys {
  const cache = new Map<string, KeyMaterial>();
  const derive = (purpose: string, version: number): KeyMaterial => {
    const id = `${purpose}\u0000${version}`;
    let hit = cache.get(id);
    if (hit === undefined) {
      const key = new Uint8Array(createHmac('sha256', MASTERS[version]).update(`${purpose}\u0000${scope}`).digest());
      hit = { kid, version, key };
      cache.set(id, hit);
    }
    return hit;
  };
  return {
    active: (purpose) => derive(purpose, activeVersion),
    version: (purpose, otherKid, version) => {
      if (otherKid !== kid || MASTERS[version] === undefined) throw new ValueError('UNKNOWN_KEY_VERSION');
      return derive(purpose, version);
    },
    scope: new TextEncoder().encode(scope),
  };
}

export function ctxOf(keys: FieldKeys = fakeKeys(), preserveStringLength = false): BindContext {
  return { keys, preserveStringLength, restrictedText: undefined };
}

/** Picks, validates, compiles and binds a technique the way the manifest loader and engine do. */
export function bindTechnique(
  jobType: ForwardJobType,
  options: Record<string, unknown>,
  ctx: BindContext = ctxOf(),
): BoundTechnique {
  const technique = techniqueFor(jobType, options);
  return technique.compile(technique.validate(options), { manifest: 'customer', field: 'f' }).bind(ctx);
}

/** The ValueError reason a call throws (fails the test when it does not throw one). */
export function reasonOf(run: () => Scalar): string {
  try {
    run();
  } catch (err) {
    if (err instanceof ValueError) return err.reason;
    throw err;
  }
  throw new Error('expected a ValueError');
}
