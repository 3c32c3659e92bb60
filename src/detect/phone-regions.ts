// Telephone numbering plans from libphonenumber-js's metadata (Google's libphonenumber data, kept up
// to date by its maintainers): which digit strings are valid numbers of a region — fixed line,
// mobile, toll free, VoIP…, by the region's own patterns and lengths — and whether the region's
// trunk prefix (`0`, `8`…) is part of how its numbers are written nationally.
//
// Compiled once per manifest into one anchored pattern per region and type list; a check is one
// regular-expression test on at most 17 digits. libphonenumber-js's own parser is not used on the
// detection path: it costs ~70 µs a call, the compiled patterns well under a microsecond.

//
// The metadata (~190 KiB) is read on first use, not at import: a gateway whose manifests never
// detect a phone number by its plan (no `detect.phoneRegions`, no international `00` candidate)
// starts without parsing it. In the build `require` is the bundle's own (scripts/build.mjs): the
// data is bundled and evaluated on that first call; run from the sources it comes from node_modules.

import { createRequire } from 'node:module';
import { getExampleNumber, type CountryCode, type Examples, type MetadataJson } from 'libphonenumber-js/core';

interface RegionPlan {
  readonly region: string;
  readonly callingCode: string;
  /** The trunk prefix (`0`, `8`, `1`…), '' when the region has none. */
  readonly trunk: string;
  /** Numbers are written nationally with the trunk prefix (`030 1234567`), not without (`(11) 96123-4567`). */
  readonly trunkWritten: boolean;
  /** The national significant number is valid: one of the region's number types. */
  readonly valid: RegExp;
  readonly minLength: number;
  readonly maxLength: number;
}

/** A region's plan as libphonenumber-js writes it, for the pseudonyms' number spaces (phone-number-space.ts). */
export interface RegionNumbering {
  readonly lengths: readonly number[];
  readonly minLength: number;
  readonly maxLength: number;
  /** The general national-number pattern. */
  readonly general: string;
  /** Fixed line, mobile, toll free, premium rate, personal, voicemail, UAN, pager, VoIP, shared cost; undefined where absent. */
  readonly types: readonly ({ pattern: string; lengths: readonly number[] | undefined } | undefined)[];
}

type CountryData = readonly unknown[];

interface PhoneData {
  readonly metadata: MetadataJson;
  readonly countries: Record<string, CountryData>;
  readonly callingCodes: Record<string, string[]>;
  readonly examples: Examples;
}

let data: PhoneData | undefined;

/** libphonenumber-js's metadata and example numbers, loaded once on first use. */
function phoneData(): PhoneData {
  if (data) return data;
  // Direct require('…') calls: the bundler follows only those.
  let loaded: [unknown, unknown];
  if (typeof require === 'function') {
    loaded = [require('libphonenumber-js/metadata.max.json'), require('libphonenumber-js/examples.mobile.json')];
  } else {
    const fromHere = createRequire(import.meta.url);
    loaded = [fromHere('libphonenumber-js/metadata.max.json'), fromHere('libphonenumber-js/examples.mobile.json')];
  }
  const metadata = loaded[0] as { countries: Record<string, CountryData>; country_calling_codes: Record<string, string[]> };
  data = {
    metadata: metadata as unknown as MetadataJson,
    countries: metadata.countries,
    callingCodes: metadata.country_calling_codes,
    examples: loaded[1] as Examples,
  };
  return data;
}

/**
 * Whether a region writes its numbers nationally with the trunk prefix: libphonenumber's own national
 * formatting of the region's example mobile number tells (`01512 3456789` in Germany, `(11)
 * 96123-4567` in Brazil, `131 2345 6789` in China, NANP's `1` optional). Where the prefix is not
 * written it is still accepted when present (China's fixed lines `010 …`).
 */
function trunkWritten(region: string, trunk: string): boolean {
  if (trunk === '') return false;
  const { examples, metadata } = phoneData();
  const example = getExampleNumber(region as CountryCode, examples, metadata);
  if (example === undefined) return true;
  return example.formatNational().replace(/\D/g, '').startsWith(trunk);
}

const plans = new Map<string, RegionPlan | undefined>();
/** Candidates remembered per scanner (cleared when full: bounded memory, no eviction bookkeeping). */
const MEMO_SIZE = 4096;

function planOf(region: string): RegionPlan | undefined {
  if (plans.has(region)) return plans.get(region);
  const data = phoneData().countries[region];
  let plan: RegionPlan | undefined;
  if (data !== undefined) {
    const callingCode = String(data[0]);
    const trunk = typeof data[5] === 'string' ? data[5] : '';
    const types = (Array.isArray(data[11]) ? data[11] : []) as readonly unknown[];
    const patterns = types.filter((t): t is readonly [string] => Array.isArray(t) && typeof t[0] === 'string').map((t) => t[0]);
    const lengths = (Array.isArray(data[3]) ? data[3] : []) as number[];
    if (patterns.length > 0 && lengths.length > 0) {
      plan = {
        region,
        callingCode,
        trunk,
        trunkWritten: trunkWritten(region, trunk),
        valid: new RegExp(`^(?:${patterns.join('|')})$`),
        minLength: Math.min(...lengths),
        maxLength: Math.max(...lengths),
      };
    }
  }
  plans.set(region, plan);
  return plan;
}

/** The numbering plan of a region libphonenumber-js knows (upper-case code), else undefined. */
export function regionNumbering(region: string): RegionNumbering | undefined {
  const plan = planOf(region);
  if (plan === undefined) return undefined;
  const data = phoneData().countries[region];
  const types = (data[11] as readonly unknown[]).map((t) =>
    Array.isArray(t) && typeof t[0] === 'string' ? { pattern: t[0], lengths: Array.isArray(t[1]) ? (t[1] as number[]) : undefined } : undefined,
  );
  return { lengths: data[3] as number[], minLength: plan.minLength, maxLength: plan.maxLength, general: String(data[2]), types };
}

/** The regions of a country calling code, in libphonenumber-js's order (the main region first); [] for an unassigned code. */
export function regionsOfCallingCode(callingCode: string): readonly string[] {
  return phoneData().callingCodes[callingCode] ?? [];
}

/** A region's calling code, trunk prefix and whether it is written (undefined for an unknown region). */
export function regionTrunk(region: string): { readonly callingCode: string; readonly trunk: string; readonly trunkWritten: boolean } | undefined {
  return planOf(region);
}

/** Upper-case region codes that libphonenumber-js knows; the unknown ones, for a clear error. */
export function unknownPhoneRegions(regions: readonly string[]): string[] {
  return regions.filter((r) => planOf(r.toUpperCase()) === undefined);
}

/** The national numbering plans of a list of regions, for national writings (`030 1234567`). */
export class PhoneRegions {
  private readonly plans: readonly RegionPlan[];
  /** Fewest and most digits a national writing of any of the regions has (trunk prefix included). */
  readonly minDigits: number;
  readonly maxDigits: number;

  /** A NANP region (calling code 1) is among the regions: its numbers are read by phone.ts's own NANP rules. */
  readonly nanp: boolean;

  constructor(regions: readonly string[]) {
    const all = regions.map((r) => planOf(r.toUpperCase())).filter((p): p is RegionPlan => p !== undefined);
    this.nanp = all.some((p) => p.callingCode === '1');
    this.plans = all.filter((p) => p.callingCode !== '1');
    this.minDigits = Math.min(...this.plans.map((p) => p.minLength), 99);
    this.maxDigits = Math.max(...this.plans.map((p) => p.maxLength + p.trunk.length), 0);
  }

  get size(): number {
    return this.plans.length;
  }

  /**
   * `digits` as written nationally (trunk prefix included where the region writes it) is a valid
   * number of one of the regions.
   */
  nationalValid(digits: string): boolean {
    // Digit-heavy text repeats its candidates (tables, logs): a small memo spares the patterns.
    const known = this.memo.get(digits);
    if (known !== undefined) return known;
    let valid = false;
    for (const p of this.plans) {
      let nsn = digits;
      if (p.trunk !== '' && digits.startsWith(p.trunk)) nsn = digits.slice(p.trunk.length);
      else if (p.trunkWritten) continue;
      if (nsn.length >= p.minLength && nsn.length <= p.maxLength && p.valid.test(nsn)) {
        valid = true;
        break;
      }
    }
    if (this.memo.size >= MEMO_SIZE) this.memo.clear();
    this.memo.set(digits, valid);
    return valid;
  }

  private readonly memo = new Map<string, boolean>();
}

/**
 * Digits after `+` or `00` (calling code first) are a valid number of the region(s) of that calling
 * code. Used where the international prefix alone is weak evidence (`00` written as one group).
 */
export function internationalValid(digits: string): boolean {
  for (let n = 1; n <= 3 && n < digits.length; n++) {
    const regions = phoneData().callingCodes[digits.slice(0, n)];
    if (regions === undefined) continue;
    const nsn = digits.slice(n);
    for (const region of regions) {
      const p = planOf(region);
      if (p !== undefined && nsn.length >= p.minLength && nsn.length <= p.maxLength && p.valid.test(nsn)) return true;
    }
    return false;
  }
  return false;
}
