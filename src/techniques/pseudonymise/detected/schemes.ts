// The pseudonym scheme of each detected kind: one step of a keyed permutation of the kind's valid
// values of one layout, under the kind's field keys (purpose `ff1`, as its Pseudonymise rule).
// Cards, SSNs, phones and IP addresses get schemes whose outputs are valid by construction
// (card.ts, ssn.ts, phone.ts, ip.ts); emails and IBANs take their rule's own format, which already
// keeps them valid (local part letters and digits, domain kept; IBAN layout kept and check digits
// recomputed). The engine walks on only when a pseudonym would read differently in its context
// (src/engine/content-action.ts).

import type { Scalar } from '../../../core/types.ts';
import type { DetectKind } from '../../../detect/kinds.ts';
import type { BoundTechnique, FieldKeys } from '../../technique.ts';
import { ValueError } from '../../technique.ts';
import { ff1For, TweakCache } from '../fpe-core.ts';
import { CardScheme } from './card.ts';
import { DetectedTweaks } from './digit-text.ts';
import { IpScheme } from './ip.ts';
import { PhoneScheme } from './phone.ts';
import { SsnScheme } from './ssn.ts';

/** What a kind's Pseudonymise rule says about its detected values (card: keepFirst/keepBin, keepLast). */
export interface DetectedOptions {
  readonly keepFirst?: number;
  readonly keepLast?: number;
}

/** One step of a kind's permutation, each way. */
export interface KindScheme {
  forward(value: Scalar): Scalar;
  inverse(value: Scalar): Scalar;
  /**
   * forward (or inverse, `decrypt`) of many values at once: FF1 runs once for all of them, one AES
   * call per Feistel round instead of one per value (Node's per-call cost is most of a lone FF1
   * run). Entry k is exactly what forward/inverse gives values[k], with the extra cycle-walk steps
   * that took added to steps[k]; undefined where the one-value form must be asked (it throws, or
   * the value is of a shape not batched).
   */
  many(values: readonly Scalar[], decrypt: boolean, steps: Int32Array): (Scalar | undefined)[];
}

interface TextStep {
  step(value: string, decrypt: boolean): string;
  stepMany(values: readonly string[], decrypt: boolean, steps: Int32Array): (string | undefined)[];
}

/** Text schemes also take JSON numbers (a card written as a number): digits in, a number out. */
function textScheme(scheme: TextStep): KindScheme {
  const run = (value: Scalar, decrypt: boolean): Scalar => {
    if (typeof value === 'string') return scheme.step(value, decrypt);
    if (typeof value === 'number' && Number.isSafeInteger(value)) {
      const out = Number(scheme.step(String(Math.abs(value)), decrypt));
      return value < 0 ? -out : out;
    }
    throw new ValueError('UNSUPPORTED_VALUE_TYPE');
  };
  // Strings only: a JSON number (a whole card) is rare and takes the one-value form.
  const many = (values: readonly Scalar[], decrypt: boolean, steps: Int32Array): (Scalar | undefined)[] => {
    const index: number[] = [];
    const texts: string[] = [];
    values.forEach((v, k) => {
      if (typeof v === 'string') (index.push(k), texts.push(v));
    });
    const out = new Array<Scalar | undefined>(values.length);
    const stepsOf = new Int32Array(texts.length);
    const results = scheme.stepMany(texts, decrypt, stepsOf);
    for (let j = 0; j < index.length; j++) {
      out[index[j]] = results[j];
      steps[index[j]] += stepsOf[j];
    }
    return out;
  };
  return { forward: (v) => run(v, false), inverse: (v) => run(v, true), many };
}

/** A kind that takes its rule's own format: the rule's batched forms, where it has them. */
function ruleScheme(technique: BoundTechnique): KindScheme {
  const many = (values: readonly Scalar[], decrypt: boolean): (Scalar | undefined)[] => {
    const batch = decrypt ? technique.inverseBatch : technique.forwardBatch;
    if (batch === undefined) return new Array<Scalar | undefined>(values.length);
    return batch(values).map((r) => (r instanceof ValueError ? undefined : r));
  };
  return { forward: (v) => technique.forward(v), inverse: (v) => technique.inverse!(v), many };
}

/**
 * The scheme for detected values of `kind` under `keys`; `technique` is the kind's bound
 * Pseudonymise rule, used as it is for emails and IBANs. `phoneRegions` (detect.phoneRegions):
 * the plans national phone writings are placed in.
 */
export function detectedScheme(
  kind: DetectKind,
  keys: FieldKeys,
  technique: BoundTechnique,
  options: DetectedOptions | undefined,
  phoneRegions: readonly string[] = [],
): KindScheme {
  const key = keys.active('ff1').key;
  const tweaks = new DetectedTweaks(keys.scope);
  switch (kind) {
    case 'card':
      return textScheme(new CardScheme(ff1For(key, 10), tweaks, { keepFirst: options?.keepFirst ?? 0, keepLast: options?.keepLast ?? 0 }));
    case 'ssn':
      return textScheme(new SsnScheme(ff1For(key, 2), tweaks));
    case 'phone':
      return textScheme(new PhoneScheme(ff1For(key, 10), ff1For(key, 2), tweaks, key, phoneRegions));
    case 'ipAddress':
      return textScheme(new IpScheme(ff1For(key, 256), ff1For(key, 16), tweaks, new TweakCache(keys.scope).forShape('ipv4')));
    default:
      return ruleScheme(technique);
  }
}
