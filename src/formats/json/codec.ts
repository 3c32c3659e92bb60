// JSON codec. Text in, text out: protected values are replaced where they stand and every other
// byte is kept (protect-text.ts), so an upstream reads exactly what the client sent except for the
// protected values. A key whose name (or path) matches a rule protects every scalar beneath it, so
// `"name": {"first": …}` is not left in clear; a nested key with its own rule wins. A value the
// doors already parsed (the DocumentCodec contract allows it) is walked in place instead; keys such
// as `__proto__` stay plain data there too (JSON.parse makes them own properties; writes go through
// defineProperty).

import { DpgError } from '../../core/errors.ts';
import { isSafeName, WITHHELD } from '../../core/safe-name.ts';
import type { Scalar } from '../../core/types.ts';
import { innerAction, type CodecOptions, type DocumentCodec, type FieldAction, type FieldResolver } from '../codec.ts';
import { protectEmbeddedJson, protectJsonText } from './protect-text.ts';

export interface JsonLimits {
  /** Deepest nesting accepted. */
  readonly maxDepth: number;
}

const DEFAULT_LIMITS: JsonLimits = { maxDepth: 256 };
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function childPath(parent: string, key: string): string {
  return IDENTIFIER.test(key) ? `${parent}.${key}` : `${parent}[${JSON.stringify(key)}]`;
}

/** A location for failure reports: keys that are not plain names are withheld (`$.a[?]`). */
function childLocation(parent: string, key: string): string {
  return isSafeName(key) ? `${parent}.${key}` : `${parent}[${WITHHELD}]`;
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}

/** Walks a parsed JSON value, protecting it in place. */
class JsonWalker {
  private readonly usesPaths: boolean;
  /** Keys and indexes from the root to the node being visited; paths are built from it only on demand. */
  private readonly trail: (string | number)[] = [];

  constructor(
    private readonly resolver: FieldResolver,
    private readonly limits: JsonLimits,
  ) {
    this.usesPaths = resolver.usesPaths;
  }

  /**
   * Protects the root; returns the (possibly replaced) root value. `inherited` applies to the
   * whole document (a gRPC JSON cell under a matched label), like a matched key's value.
   */
  run(root: unknown, inherited?: FieldAction): unknown {
    // Values under no key at all (a scalar document, array elements outside objects) get the
    // content-detection action, if the plan has one.
    const loose = inherited ?? this.resolver.contentAction?.();
    if (root === null || typeof root !== 'object') {
      return loose === undefined ? root : this.protectScalar(loose, root, 0, undefined, () => '$');
    }
    this.visit(root as object, inherited, 1, loose);
    return root;
  }

  /**
   * A scalar's protected value. An unclaimed string holding a JSON document is protected as one
   * (protect-text.ts), below `last` (undefined: the root itself).
   */
  private protectScalar(action: FieldAction, v: unknown, depth: number, last: string | number | undefined, location: () => string): Scalar {
    if (action.byContent === true && typeof v === 'string') {
      const trail = () => (last === undefined ? [] : [...this.trail, last]);
      const embedded = protectEmbeddedJson(v, this.resolver, this.limits.maxDepth - depth, trail);
      if (embedded !== undefined) return embedded;
    }
    return action.apply(v as Scalar, location);
  }

  private pathTo(last: string | number): string {
    let p = '$';
    for (const step of this.trail) p = typeof step === 'number' ? `${p}[${step}]` : childPath(p, step);
    return typeof last === 'number' ? `${p}[${last}]` : childPath(p, last);
  }

  private locationTo(last: string | number): string {
    let p = '$';
    for (const step of this.trail) p = typeof step === 'number' ? `${p}[${step}]` : childLocation(p, step);
    return typeof last === 'number' ? `${p}[${last}]` : childLocation(p, last);
  }

  /** `loose`: the action for scalars of arrays reached without passing a key (see run). */
  private visit(node: object, inherited: FieldAction | undefined, depth: number, loose?: FieldAction): void {
    if (depth > this.limits.maxDepth) {
      throw new DpgError('MALFORMED_DATA_SET', `JSON nesting is deeper than the limit of ${this.limits.maxDepth} levels`);
    }
    const trail = this.trail;
    if (Array.isArray(node)) {
      const action = inherited ?? loose;
      for (let i = 0; i < node.length; i++) {
        const v = node[i];
        if (v !== null && typeof v === 'object') {
          trail.push(i);
          this.visit(v, inherited, depth + 1, loose);
          trail.pop();
        } else if (action) {
          node[i] = this.protectScalar(action, v, depth, i, () => this.locationTo(i));
        }
      }
      return;
    }
    const obj = node as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      const action = innerAction(this.resolver.resolve(key, this.usesPaths ? this.pathTo(key) : undefined), inherited);
      const v = obj[key];
      if (action === undefined) {
        if (v !== null && typeof v === 'object') {
          trail.push(key);
          this.visit(v, undefined, depth + 1);
          trail.pop();
        }
        continue;
      }
      if (action.removes(v, () => this.locationTo(key))) {
        delete obj[key];
        continue;
      }
      if (v !== null && typeof v === 'object') {
        trail.push(key);
        this.visit(v, action, depth + 1);
        trail.pop();
      } else {
        const out = this.protectScalar(action, v, depth, key, () => this.locationTo(key));
        if (out !== v) setOwn(obj, key, out);
      }
    }
  }
}

/**
 * Protects a parsed JSON value in place (the doors hand over values they parsed themselves).
 * With `inherited`, every scalar of the document gets that action unless a key has its own rule.
 */
export function protectJsonValue(
  value: unknown,
  resolver: FieldResolver,
  limits: JsonLimits = DEFAULT_LIMITS,
  inherited?: FieldAction,
): unknown {
  return new JsonWalker(resolver, limits).run(value, inherited);
}

export function createJsonCodec(limits: JsonLimits = DEFAULT_LIMITS): DocumentCodec {
  return {
    type: 'JSON',
    protect(input: string | unknown, resolver: FieldResolver, _options: CodecOptions): string | unknown {
      if (typeof input === 'string') return protectJsonText(input, resolver, limits);
      return protectJsonValue(input, resolver, limits);
    },
  };
}

export const jsonCodec: DocumentCodec = createJsonCodec();
