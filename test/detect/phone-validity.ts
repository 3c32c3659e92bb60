// Judges phone pseudonyms by libphonenumber-js itself (isValid, getType, country), not by the
// scheme's own tables: used by test/detect/phone-pseudonyms.test.ts (example numbers of every region)
// and test/detect/independent/round-trip.test.ts (the independent corpus, already built there).

import assert from 'node:assert/strict';
import { parsePhoneNumberFromString, type CountryCode, type PhoneNumber } from 'libphonenumber-js/max';
import { FF1 } from '../../src/crypto/ff1.ts';
import { PhoneScheme } from '../../src/techniques/pseudonymise/detected/phone.ts';
import { DetectedTweaks } from '../../src/techniques/pseudonymise/detected/digit-text.ts';
import { walkSteps } from '../../src/techniques/pseudonymise/detected/walk-steps.ts';
import { CORPUS_REGIONS } from './independent/generate.ts';
import { isNanpDigits } from '../../src/detect/phone.ts';

const key = new Uint8Array(32).fill(7);
export const phone = new PhoneScheme(new FF1(key, 10), new FF1(key, 2), new DetectedTweaks(Uint8Array.of(4, 5, 6)), key, CORPUS_REGIONS);

/** How libphonenumber-js reads a value: international as written, national in the first corpus region that calls it valid. */
export function read(value: string, region?: CountryCode): PhoneNumber | undefined {
  const digits = value.replace(/\D/g, '');
  if (value.trimStart().startsWith('+')) return parsePhoneNumberFromString(`+${digits}`);
  if (digits.startsWith('00')) return parsePhoneNumberFromString(`+${digits.slice(2)}`);
  // As detection reads national writings: a region that writes its trunk prefix needs it (`030…`
  // is German, `30…` is not), so the digits must be those of libphonenumber's national format.
  // NANP regions only for what detection reads as NANP (area code and exchange 2-9 first, no N11).
  const nanp = isNanpDigits(digits.length === 11 && digits.startsWith('1') ? digits.slice(1) : digits);
  for (const r of region !== undefined ? [region] : CORPUS_REGIONS.filter((c) => nanp || (c !== 'US' && c !== 'CA'))) {
    const p = parsePhoneNumberFromString(value, r);
    if (p?.isValid() && (p.countryCallingCode === '1' || p.formatNational().replace(/\D/g, '') === digits)) return p;
  }
  return undefined;
}

interface Tally {
  numbers: number;
  steps: number;
  most: number;
}

export function measure(values: readonly string[]) {
  const perRegion = new Map<string, Tally>();
  const problems: string[] = [];
  let valid = 0;
  let unchanged = 0;
  for (const value of values) {
    const before = read(value);
    const steps = walkSteps.count;
    const out = phone.step(value, false);
    const taken = walkSteps.count - steps;
    if (phone.step(out, true) !== value) problems.push(`round trip: ${value}`);
    if (out.replace(/\d/g, 'd') !== value.replace(/\d/g, 'd')) problems.push(`writing: ${value}`);
    if (before === undefined || !before.isValid()) continue;
    valid++;
    if (out === value) unchanged++;
    const after = read(out, before.country);
    if (after === undefined || !after.isValid()) problems.push(`not valid: ${value} -> ${out}`);
    else if (after.countryCallingCode !== before.countryCallingCode || after.country !== before.country) problems.push(`country: ${value} -> ${out}`);
    else if (after.getType() !== before.getType()) problems.push(`type ${before.getType()} -> ${after.getType()}: ${value} -> ${out}`);
    const region = before.country ?? before.countryCallingCode;
    const t = perRegion.get(region) ?? { numbers: 0, steps: 0, most: 0 };
    t.numbers++;
    t.steps += taken;
    t.most = Math.max(t.most, taken);
    perRegion.set(region, t);
  }
  return { perRegion, problems, valid, unchanged };
}

export function report(name: string, m: ReturnType<typeof measure>, total: number): void {
  const tallies = [...m.perRegion.entries()].sort(([, a], [, b]) => b.steps / b.numbers - a.steps / a.numbers);
  const steps = tallies.reduce((s, [, t]) => s + t.steps, 0);
  const worst = tallies.slice(0, 5).map(([r, t]) => `${r} ${(t.steps / t.numbers).toFixed(2)} (max ${t.most}, n=${t.numbers})`);
  console.log(
    `# ${name}: ${total} phones, ${m.valid} valid in their plan, ${m.valid - m.problems.length}/${m.valid} pseudonyms valid (same country and type), ` +
      `${m.unchanged} unchanged; ${m.perRegion.size} regions, extra walk steps ${(steps / Math.max(1, m.valid)).toFixed(3)} a number; highest means: ${worst.join(', ')}`,
  );
}

/** Asserts what item 5 asks of a set of phone values: every valid one gets a valid pseudonym of its country and type. */
export function assertValidPseudonyms(name: string, values: readonly string[]): ReturnType<typeof measure> {
  const m = measure(values);
  report(name, m, values.length);
  assert.deepEqual(m.problems.slice(0, 10), [], `${m.problems.length} problems`);
  assert.ok(m.unchanged <= m.valid * 0.01, `${m.unchanged} numbers kept as they were`);
  for (const [region, t] of m.perRegion) assert.ok(t.most <= 64, `${region}: a walk of ${t.most} steps`);
  return m;
}
