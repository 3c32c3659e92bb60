// The machinery every FF1 format shares: a value is turned into an FF1 job (numerals, radix, tweak,
// an optional domain test for cycle walking and a renderer), jobs run alone or batched, and values
// too small for FF1 either fail or take the documented reversible fallback (an AES-SIV token).

import { FF1, FF1_MAX_LENGTH } from '../crypto/ff1.ts';
import type { Scalar } from '../core/types.ts';
import { TOKEN_PREFIX, TokenSealer } from './ciphertext-token.ts';
import { ValueError, type BindContext, type BoundTechnique, type CompiledTechnique } from './technique.ts';

/** What a format does with a value FF1 cannot take (too short, null, boolean, wrong JSON type). */
export const SHORT_VALUE_POLICIES = ['reject', 'encrypt'] as const;
export type ShortValuePolicy = (typeof SHORT_VALUE_POLICIES)[number];

export const TOO_SHORT = 'VALUE_TOO_SHORT_FOR_FPE';
export const TOO_LONG = 'VALUE_TOO_LONG_FOR_FPE';
export const UNSUPPORTED_TYPE = 'UNSUPPORTED_VALUE_TYPE';

/** Reasons the `encrypt` fallback covers; anything else (a malformed IBAN…) still fails. */
const FALLBACK_REASONS: ReadonlySet<string> = new Set([TOO_SHORT, UNSUPPORTED_TYPE]);
/** Key purpose of the fallback tokens: never shared with the Encrypt technique's keys. */
const FALLBACK_PURPOSE = 'fpe-fallback';
/** A cycle walk this long means the value was outside its own domain: a bug, not bad luck. */
const MAX_WALK = 100_000;
/** Minimum domain of SP 800-38G Rev. 1. */
export const MIN_DOMAIN = 1_000_000;

/** One value's trip through FF1. */
export interface FpeJob {
  readonly radix: number;
  readonly tweak: Uint8Array;
  readonly numerals: ArrayLike<number>;
  /**
   * The value's domain when it is smaller than radix^length (cycle walking): FF1 is applied again
   * until the result is inside. The input is always inside, so the walk ends and stays reversible.
   */
  readonly accept?: (numerals: Uint16Array) => boolean;
  /** Builds the output value from the numerals FF1 returned. */
  render(numerals: Uint16Array): Scalar;
}

/** A format: how a value becomes an FF1 job (the same decomposition serves both directions). */
export interface FpeFormat {
  /** Throws ValueError for values the format cannot take. */
  plan(value: Scalar, tweaks: TweakCache): FpeJob;
  explain(): string;
}

/** Tweaks of one bound field: the scope, and scope + shape for mixed-class values (small cache). */
export class TweakCache {
  private readonly byShape = new Map<string, Uint8Array>();

  constructor(readonly scope: Uint8Array) {}

  /** scope || 0x00 || shape: values of different class layouts never share a permutation. */
  forShape(shape: string): Uint8Array {
    let tweak = this.byShape.get(shape);
    if (tweak === undefined) {
      tweak = new Uint8Array(this.scope.length + 1 + shape.length);
      tweak.set(this.scope, 0);
      for (let i = 0; i < shape.length; i++) tweak[this.scope.length + 1 + i] = shape.charCodeAt(i);
      if (this.byShape.size < 1024) this.byShape.set(shape, tweak);
    }
    return tweak;
  }
}

// One FF1 per derived key and radix; the keyring hands out the same key bytes for the same
// derivation, so this survives across requests without holding keys it no longer uses.
const ciphers = new WeakMap<Uint8Array, Map<number, FF1>>();

function ff1For(key: Uint8Array, radix: number): FF1 {
  let byRadix = ciphers.get(key);
  if (byRadix === undefined) {
    byRadix = new Map();
    ciphers.set(key, byRadix);
  }
  let ff1 = byRadix.get(radix);
  if (ff1 === undefined) {
    ff1 = new FF1(key, radix);
    byRadix.set(radix, ff1);
  }
  return ff1;
}

/** Checks a job's size before FF1 sees it, so failures carry our reasons, not FF1's messages. */
function checkJob(job: FpeJob): void {
  if (job.numerals.length > FF1_MAX_LENGTH) throw new ValueError(TOO_LONG);
  if (Math.pow(job.radix, job.numerals.length) < MIN_DOMAIN || job.numerals.length < 2) throw new ValueError(TOO_SHORT);
}

function walk(ff1: FF1, job: FpeJob, first: Uint16Array, decrypt: boolean): Uint16Array {
  let out = first;
  if (job.accept === undefined) return out;
  for (let steps = 0; !job.accept(out); steps++) {
    if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
    out = decrypt ? ff1.decrypt(out, job.tweak) : ff1.encrypt(out, job.tweak);
  }
  return out;
}

/** Runs one field's FF1 jobs under one key, alone or batched per radix and tweak. */
class FpeRunner {
  constructor(
    private readonly key: Uint8Array,
    private readonly decrypt: boolean,
  ) {}

  run(job: FpeJob): Scalar {
    checkJob(job);
    const ff1 = ff1For(this.key, job.radix);
    const first = this.decrypt ? ff1.decrypt(job.numerals, job.tweak) : ff1.encrypt(job.numerals, job.tweak);
    return job.render(walk(ff1, job, first, this.decrypt));
  }

  /** Jobs sharing radix and tweak go through FF1 together: one AES call per Feistel round. */
  runBatch(jobs: readonly (FpeJob | ValueError)[]): (Scalar | ValueError)[] {
    const results: (Scalar | ValueError)[] = new Array(jobs.length);
    const groups = new Map<number, Map<Uint8Array, number[]>>();
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i];
      if (job instanceof ValueError) {
        results[i] = job;
        continue;
      }
      try {
        checkJob(job);
      } catch (err) {
        results[i] = err as ValueError;
        continue;
      }
      let byTweak = groups.get(job.radix);
      if (byTweak === undefined) groups.set(job.radix, (byTweak = new Map()));
      const members = byTweak.get(job.tweak);
      if (members === undefined) byTweak.set(job.tweak, [i]);
      else members.push(i);
    }
    for (const [radix, byTweak] of groups) {
      const ff1 = ff1For(this.key, radix);
      for (const [tweak, members] of byTweak) {
        const input = members.map((i) => (jobs[i] as FpeJob).numerals);
        const outputs = this.decrypt ? ff1.decryptBatch(input, tweak) : ff1.encryptBatch(input, tweak);
        for (let k = 0; k < members.length; k++) {
          const job = jobs[members[k]] as FpeJob;
          try {
            results[members[k]] = job.render(walk(ff1, job, outputs[k], this.decrypt));
          } catch (err) {
            if (!(err instanceof ValueError)) throw err;
            results[members[k]] = err;
          }
        }
      }
    }
    return results;
  }
}

function looksLikeToken(value: Scalar): boolean {
  return typeof value === 'string' && value.startsWith(TOKEN_PREFIX);
}

function planOrError(format: FpeFormat, value: Scalar, tweaks: TweakCache): FpeJob | ValueError {
  try {
    return format.plan(value, tweaks);
  } catch (err) {
    if (err instanceof ValueError) return err;
    throw err;
  }
}

/**
 * Binds an FF1 format to a request. With the `encrypt` policy, values FF1 cannot take become
 * `enc:v1:siv:…` tokens (deterministic, reversible); a pseudonym that happens to look like such a
 * token is replaced by a token too, so Reconstruct can always tell the two apart.
 */
function bindFpe(format: FpeFormat, policy: ShortValuePolicy, ctx: BindContext): BoundTechnique {
  const key = ctx.keys.active('ff1').key;
  const tweaks = new TweakCache(ctx.keys.scope);
  const encryptor = new FpeRunner(key, false);
  const decryptor = new FpeRunner(key, true);
  const sealer = policy === 'encrypt' ? new TokenSealer(ctx.keys, FALLBACK_PURPOSE) : undefined;

  const fallbackForward = (value: Scalar, err: ValueError): Scalar => {
    if (sealer === undefined || !FALLBACK_REASONS.has(err.reason)) throw err;
    return sealer.seal(value, 'siv');
  };
  const guardForward = (value: Scalar, pseudonym: Scalar): Scalar =>
    sealer !== undefined && looksLikeToken(pseudonym) ? sealer.seal(value, 'siv') : pseudonym;

  const forward = (value: Scalar): Scalar => {
    const job = planOrError(format, value, tweaks);
    if (job instanceof ValueError) return fallbackForward(value, job);
    try {
      return guardForward(value, encryptor.run(job));
    } catch (err) {
      if (err instanceof ValueError) return fallbackForward(value, err);
      throw err;
    }
  };

  const inverse = (value: Scalar): Scalar => {
    if (sealer !== undefined && looksLikeToken(value)) return sealer.open(value as string);
    return decryptor.run(format.plan(value, tweaks));
  };

  const forwardBatch = (values: readonly Scalar[]): (Scalar | ValueError)[] => {
    const results = encryptor.runBatch(values.map((v) => planOrError(format, v, tweaks)));
    for (let i = 0; i < results.length; i++) {
      const r = results[i];
      try {
        results[i] = r instanceof ValueError ? fallbackForward(values[i], r) : guardForward(values[i], r);
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
        results[i] = err;
      }
    }
    return results;
  };

  const inverseBatch = (values: readonly Scalar[]): (Scalar | ValueError)[] => {
    const tokens: number[] = [];
    const jobs = values.map((v, i): FpeJob | ValueError => {
      if (sealer !== undefined && looksLikeToken(v)) {
        tokens.push(i);
        return new ValueError('PENDING');
      }
      return planOrError(format, v, tweaks);
    });
    const results = decryptor.runBatch(jobs);
    for (const i of tokens) {
      try {
        results[i] = (sealer as TokenSealer).open(values[i] as string);
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
        results[i] = err;
      }
    }
    return results;
  };

  return { forward, inverse, forwardBatch, inverseBatch };
}

export function compileFpe(id: string, format: FpeFormat, policy: ShortValuePolicy): CompiledTechnique {
  return {
    bind: (ctx) => bindFpe(format, policy, ctx),
    explain: () => `${id}(${format.explain()}, shortValues=${policy})`,
  };
}
