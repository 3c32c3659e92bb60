// The machinery every FF1 format shares: a value is turned into an FF1 job (numerals, radix, tweak,
// an optional domain test for cycle walking and a renderer), jobs run alone or batched, and values
// too small for FF1 take the short-value scheme (fpe-short.ts), fail, or become an AES-SIV token.

import { FF1, FF1_MAX_LENGTH } from '../../crypto/ff1.ts';
import type { Scalar } from '../../core/types.ts';
import { TOKEN_PREFIX, TokenSealer } from '../encrypt/ciphertext-token.ts';
import { KeptValue } from './fpe-short.ts';
import { ValueError, type BindContext, type BoundTechnique, type CompiledTechnique } from '../technique.ts';

/**
 * What a format does with a value whose symbols are too few for FF1: `pseudonymise` (the short-value
 * scheme, fpe-short.ts; preserve_string_length still refuses), `reject` (fail), `encrypt` (an AES-SIV
 * token, which also covers null, booleans and wrong JSON types).
 */
export const SHORT_VALUE_POLICIES = ['pseudonymise', 'reject', 'encrypt'] as const;
export type ShortValuePolicy = (typeof SHORT_VALUE_POLICIES)[number];
export const DEFAULT_SHORT_VALUE_POLICY: ShortValuePolicy = 'pseudonymise';

export const TOO_SHORT = 'VALUE_TOO_SHORT_FOR_FPE';
export const TOO_LONG = 'VALUE_TOO_LONG_FOR_FPE';
export const UNSUPPORTED_TYPE = 'UNSUPPORTED_VALUE_TYPE';

/** Reasons the `encrypt` fallback covers; anything else (a malformed IBAN…) still fails. */
const FALLBACK_REASONS: ReadonlySet<string> = new Set([TOO_SHORT, UNSUPPORTED_TYPE]);
/** Key purpose of the fallback tokens: never shared with the Encrypt technique's keys. */
const FALLBACK_PURPOSE = 'fpe-fallback';
/** A cycle walk this long means the value was outside its own domain: a bug, not bad luck. */
const MAX_WALK = 100_000;
/**
 * Batches are planned, encrypted and finished this many values at a time (FF1's own AES chunk
 * size): a column of 50,000 values then never has more than one chunk of jobs alive, and the
 * young-generation GC, which copies whatever is alive, stays cheap.
 */
const BATCH_CHUNK = 4096;
/** Placeholder job for a fallback token, opened after its chunk instead of going through FF1. */
const PENDING = new ValueError('PENDING');
/** Minimum domain of SP 800-38G Rev. 1. */
export const MIN_DOMAIN = 1_000_000;

/**
 * One value's trip through FF1. FF1's output reaches accept and render as out[at, at + length):
 * batches keep every value's numerals in one packed array, so no per-value array is allocated.
 */
export interface FpeJob {
  readonly radix: number;
  readonly tweak: Uint8Array;
  /** How many numerals FF1 gets. */
  readonly length: number;
  /** Writes the numerals into into[at, at + length) (a batch packs them all into one array). */
  writeNumerals(into: Uint16Array, at: number): void;
  /**
   * The value's domain when it is smaller than radix^length (cycle walking): FF1 is applied again
   * until the result is inside. The input is always inside, so the walk ends and stays reversible.
   */
  accept?(out: Uint16Array, at: number): boolean;
  /** Builds the output value from the numerals FF1 returned. */
  render(out: Uint16Array, at: number): Scalar;
}

/**
 * A job whose numeral string is held as one integer, rank = NUM_radix(X), with radix^length <= 2^52
 * (FF1.numbersFit): FF1 then works on the number itself (FF1.encryptNumbers), and walking and
 * rendering never spell it out as numerals. Mixed-class values, ranked in a mixed radix and
 * encrypted as bits, are the case this exists for.
 */
export interface FpeNumberJob {
  readonly radix: number;
  readonly tweak: Uint8Array;
  readonly length: number;
  readonly rank: number;
  /** As FpeJob.accept, for FF1's output as a number. */
  acceptRank?(rank: number): boolean;
  renderRank(rank: number): Scalar;
}

/** A job, or a value that is its own pseudonym (no symbol to encrypt: see fpe-short.ts). */
export type AnyFpeJob = FpeJob | FpeNumberJob | KeptValue;

function isNumberJob(job: FpeJob | FpeNumberJob): job is FpeNumberJob {
  return typeof (job as FpeNumberJob).rank === 'number';
}

/** A format: how a value becomes an FF1 job (the same decomposition serves both directions). */
export interface FpeFormat {
  /**
   * Throws ValueError for values the format cannot take. With `short`, values too small for FF1
   * become short-value jobs (fpe-short.ts) instead of failing with VALUE_TOO_SHORT_FOR_FPE.
   */
  plan(value: Scalar, tweaks: TweakCache, short: boolean): AnyFpeJob;
  explain(): string;
}

/** A class layout number (leading 1, then 1 = digit per symbol) as its shape string of D and L. */
function layoutShape(layout: number): string {
  const n = 31 - Math.clz32(layout);
  let shape = '';
  for (let k = 0; k < n; k++) shape += (layout >>> (n - 1 - k)) & 1 ? 'D' : 'L';
  return shape;
}

/** Tweaks of one bound field: the scope, and scope + shape for mixed-class values (small cache). */
export class TweakCache {
  private readonly byShape = new Map<string, Uint8Array>();
  private readonly byLayout = new Map<number, Uint8Array>();
  private readonly byShortDomain = new Map<string, Uint8Array>();

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

  /**
   * scope || 0x01 || domain id (ASCII): the short-value scheme's permutations, apart from every
   * normal one (whose tweaks are the scope alone or scope || 0x00 || shape).
   */
  forShort(domain: string): Uint8Array {
    let tweak = this.byShortDomain.get(domain);
    if (tweak === undefined) {
      tweak = new Uint8Array(this.scope.length + 1 + domain.length);
      tweak.set(this.scope, 0);
      tweak[this.scope.length] = 1;
      for (let i = 0; i < domain.length; i++) tweak[this.scope.length + 1 + i] = domain.charCodeAt(i);
      this.byShortDomain.set(domain, tweak);
    }
    return tweak;
  }

  /** forShape for a layout number (see layoutShape): no shape string is built per value. */
  forLayout(layout: number): Uint8Array {
    let tweak = this.byLayout.get(layout);
    if (tweak === undefined) {
      tweak = this.forShape(layoutShape(layout));
      if (this.byLayout.size < 1024) this.byLayout.set(layout, tweak);
    }
    return tweak;
  }
}

// One FF1 per derived key and radix; the keyring hands out the same key bytes for the same
// derivation, so this survives across requests without holding keys it no longer uses.
const ciphers = new WeakMap<Uint8Array, Map<number, FF1>>();

export function ff1For(key: Uint8Array, radix: number): FF1 {
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
function checkJob(job: FpeJob | FpeNumberJob): void {
  if (job.length > FF1_MAX_LENGTH) throw new ValueError(TOO_LONG);
  // From 20 numerals on even radix 2 clears the minimum domain: skips Math.pow for most values.
  if (job.length < 20 && (Math.pow(job.radix, job.length) < MIN_DOMAIN || job.length < 2)) throw new ValueError(TOO_SHORT);
}

function walk(ff1: FF1, job: FpeJob, first: Uint16Array, decrypt: boolean): Uint16Array {
  let out = first;
  if (job.accept === undefined) return out;
  for (let steps = 0; !job.accept(out, 0); steps++) {
    if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
    out = decrypt ? ff1.decrypt(out, job.tweak) : ff1.encrypt(out, job.tweak);
  }
  return out;
}

/** Runs one field's FF1 jobs under one key, alone or batched per radix. */
class FpeRunner {
  constructor(
    private readonly key: Uint8Array,
    private readonly decrypt: boolean,
  ) {}

  run(job: AnyFpeJob): Scalar {
    if (job instanceof KeptValue) return job.value;
    checkJob(job);
    const ff1 = ff1For(this.key, job.radix);
    if (isNumberJob(job)) return this.#runNumber(ff1, job);
    const numerals = new Uint16Array(job.length);
    job.writeNumerals(numerals, 0);
    const first = this.decrypt ? ff1.decrypt(numerals, job.tweak) : ff1.encrypt(numerals, job.tweak);
    return job.render(walk(ff1, job, first, this.decrypt), 0);
  }

  /** run() for a number job: the same walk as walk(), on the rank. */
  #runNumber(ff1: FF1, job: FpeNumberJob): Scalar {
    const value = Float64Array.of(job.rank);
    const lengths = [job.length];
    const tweaks = [job.tweak];
    for (let steps = 0; ; steps++) {
      if (this.decrypt) ff1.decryptNumbers(value, lengths, tweaks);
      else ff1.encryptNumbers(value, lengths, tweaks);
      if (job.acceptRank === undefined || job.acceptRank(value[0])) return job.renderRank(value[0]);
      if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
    }
  }

  /**
   * Jobs sharing a radix go through FF1 together whatever their tweak or length: one AES call per
   * Feistel round per length. Cycle walking is batched too: the values still outside their domain
   * after a pass go through FF1 again together, never one by one.
   */
  runBatch(jobs: readonly (AnyFpeJob | ValueError)[]): (Scalar | ValueError)[] {
    const results: (Scalar | ValueError)[] = new Array(jobs.length);
    const byRadix = new Map<number, number[]>();
    // Number jobs go apart, whatever their radix (FF1 per radix is found per job group below).
    const numberJobs = new Map<number, number[]>();
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i];
      if (job instanceof ValueError) {
        results[i] = job;
        continue;
      }
      if (job instanceof KeptValue) {
        results[i] = job.value;
        continue;
      }
      try {
        checkJob(job);
      } catch (err) {
        results[i] = err as ValueError;
        continue;
      }
      const groups = isNumberJob(job) ? numberJobs : byRadix;
      const members = groups.get(job.radix);
      if (members === undefined) groups.set(job.radix, [i]);
      else members.push(i);
    }
    for (const [radix, members] of byRadix) this.#runRadix(ff1For(this.key, radix), jobs as readonly FpeJob[], members, results);
    for (const [radix, members] of numberJobs) this.#runNumbers(ff1For(this.key, radix), jobs as readonly FpeNumberJob[], members, results);
    return results;
  }

  /** #runRadix for number jobs: the ranks in one Float64Array, transformed in place. */
  #runNumbers(ff1: FF1, jobs: readonly FpeNumberJob[], members: readonly number[], results: (Scalar | ValueError)[]): void {
    const count = members.length;
    const values = new Float64Array(count);
    const lengths = new Int32Array(count);
    const tweaks = new Array<Uint8Array>(count);
    for (let k = 0; k < count; k++) {
      const job = jobs[members[k]];
      values[k] = job.rank;
      lengths[k] = job.length;
      tweaks[k] = job.tweak;
    }
    if (this.decrypt) ff1.decryptNumbers(values, lengths, tweaks);
    else ff1.encryptNumbers(values, lengths, tweaks);
    let walking: number[] = [];
    for (let k = 0; k < count; k++) {
      const job = jobs[members[k]];
      if (job.acceptRank !== undefined && !job.acceptRank(values[k])) walking.push(k);
    }
    for (let steps = 0; walking.length > 0; steps++) {
      if (steps >= MAX_WALK) {
        for (const k of walking) results[members[k]] = new ValueError('FPE_DOMAIN_ERROR');
        break;
      }
      if (this.decrypt) ff1.decryptNumbers(values, lengths, tweaks, walking);
      else ff1.encryptNumbers(values, lengths, tweaks, walking);
      const still: number[] = [];
      for (const k of walking) if (!(jobs[members[k]] as Required<FpeNumberJob>).acceptRank(values[k])) still.push(k);
      walking = still;
    }
    for (let k = 0; k < count; k++) {
      const i = members[k];
      if (results[i] !== undefined) continue;
      try {
        results[i] = jobs[i].renderRank(values[k]);
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
        results[i] = err;
      }
    }
    values.fill(0);
  }

  #runRadix(ff1: FF1, jobs: readonly FpeJob[], members: readonly number[], results: (Scalar | ValueError)[]): void {
    const count = members.length;
    const starts = new Int32Array(count);
    const lengths = new Int32Array(count);
    const tweaks = new Array<Uint8Array>(count);
    let total = 0;
    for (let k = 0; k < count; k++) {
      const job = jobs[members[k]];
      starts[k] = total;
      lengths[k] = job.length;
      tweaks[k] = job.tweak;
      total += lengths[k];
    }
    // All values' numerals in one array, transformed in place by FF1 (one allocation per batch).
    const packed = new Uint16Array(total);
    for (let k = 0; k < count; k++) jobs[members[k]].writeNumerals(packed, starts[k]);
    if (this.decrypt) ff1.decryptPacked(packed, starts, lengths, tweaks);
    else ff1.encryptPacked(packed, starts, lengths, tweaks);
    // Positions (in members) of the values whose result is still outside their domain.
    let walking: number[] = [];
    for (let k = 0; k < count; k++) {
      const job = jobs[members[k]];
      if (job.accept !== undefined && !job.accept(packed, starts[k])) walking.push(k);
    }
    for (let steps = 0; walking.length > 0; steps++) {
      if (steps >= MAX_WALK) {
        for (const k of walking) results[members[k]] = new ValueError('FPE_DOMAIN_ERROR');
        break;
      }
      if (this.decrypt) ff1.decryptPacked(packed, starts, lengths, tweaks, walking);
      else ff1.encryptPacked(packed, starts, lengths, tweaks, walking);
      const still: number[] = [];
      for (const k of walking) if (!(jobs[members[k]] as Required<FpeJob>).accept(packed, starts[k])) still.push(k);
      walking = still;
    }
    for (let k = 0; k < count; k++) {
      const i = members[k];
      if (results[i] !== undefined) continue;
      try {
        results[i] = jobs[i].render(packed, starts[k]);
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
        results[i] = err;
      }
    }
    packed.fill(0);
  }
}

function looksLikeToken(value: Scalar): boolean {
  return typeof value === 'string' && value.startsWith(TOKEN_PREFIX);
}

function planOrError(format: FpeFormat, value: Scalar, tweaks: TweakCache, short: boolean): AnyFpeJob | ValueError {
  try {
    return format.plan(value, tweaks, short);
  } catch (err) {
    if (err instanceof ValueError) return err;
    throw err;
  }
}

/**
 * Binds an FF1 format to a request. With the `pseudonymise` policy short values take the
 * short-value scheme, except that preserve_string_length refuses them on the way out (the scheme
 * may change a length); Reconstruct always reads them back. With the `encrypt` policy, values FF1
 * cannot take become `enc:v1:siv:…` tokens (deterministic, reversible); a pseudonym that happens to
 * look like such a token is replaced by a token too, so Reconstruct can always tell the two apart.
 */
function bindFpe(format: FpeFormat, policy: ShortValuePolicy, ctx: BindContext): BoundTechnique {
  const key = ctx.keys.active('ff1').key;
  const tweaks = new TweakCache(ctx.keys.scope);
  const shortForward = policy === 'pseudonymise' && !ctx.preserveStringLength;
  const shortInverse = policy === 'pseudonymise';
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
    const job = planOrError(format, value, tweaks, shortForward);
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
    return decryptor.run(format.plan(value, tweaks, shortInverse));
  };

  const forwardBatch = (values: readonly Scalar[]): (Scalar | ValueError)[] => {
    const results = new Array<Scalar | ValueError>(values.length);
    const jobs: (AnyFpeJob | ValueError)[] = [];
    for (let from = 0; from < values.length; from += BATCH_CHUNK) {
      const to = Math.min(from + BATCH_CHUNK, values.length);
      jobs.length = 0;
      for (let i = from; i < to; i++) jobs.push(planOrError(format, values[i], tweaks, shortForward));
      const chunk = encryptor.runBatch(jobs);
      for (let i = from; i < to; i++) {
        const r = chunk[i - from];
        try {
          results[i] = r instanceof ValueError ? fallbackForward(values[i], r) : guardForward(values[i], r);
        } catch (err) {
          if (!(err instanceof ValueError)) throw err;
          results[i] = err;
        }
      }
    }
    return results;
  };

  const inverseBatch = (values: readonly Scalar[]): (Scalar | ValueError)[] => {
    const results = new Array<Scalar | ValueError>(values.length);
    const jobs: (AnyFpeJob | ValueError)[] = [];
    const tokens: number[] = [];
    for (let from = 0; from < values.length; from += BATCH_CHUNK) {
      const to = Math.min(from + BATCH_CHUNK, values.length);
      jobs.length = 0;
      tokens.length = 0;
      for (let i = from; i < to; i++) {
        if (sealer !== undefined && looksLikeToken(values[i])) {
          tokens.push(i);
          jobs.push(PENDING);
        } else {
          jobs.push(planOrError(format, values[i], tweaks, shortInverse));
        }
      }
      const chunk = decryptor.runBatch(jobs);
      for (let i = from; i < to; i++) results[i] = chunk[i - from];
      for (const i of tokens) {
        try {
          results[i] = (sealer as TokenSealer).open(values[i] as string);
        } catch (err) {
          if (!(err instanceof ValueError)) throw err;
          results[i] = err;
        }
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
