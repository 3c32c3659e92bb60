// Generators of values of every detected kind, in the writings detection accepts, and of the
// neighbours a value meets in text (digit groups, separators, punctuation, other values): shared by
// the round-trip properties (test/engine/detection-round-trip.test.ts) and the cost benchmark
// (bench/detect-pseudonymise.bench.ts). Values are built valid (brand prefix, Luhn, mod-97…).

import fc from 'fast-check';
import { isGtinDigits } from '../../src/detect/card.ts';

const digitsArb = (n: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(''));

/** The Luhn check digit for `body` (all digits but the last). */
export function luhnDigit(body: string): string {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = body.charCodeAt(body.length - 1 - i) - 48;
    if (i % 2 === 0) ((d *= 2), d > 9 && (d -= 9));
    sum += d;
  }
  return String((10 - (sum % 10)) % 10);
}

/** Brand prefixes and lengths (docs/detection.md), one or two per brand. */
const BRANDS: readonly (readonly [string, readonly number[]])[] = [
  ['4', [16, 19]], // 13-digit Visas are no longer detected (docs/detection.md: EAN-13 barcodes)
  ['51', [16]],
  ['2221', [16]],
  ['34', [15]],
  ['37', [15]],
  ['6011', [16, 19]],
  ['3530', [16]],
  ['36', [14]],
  ['62', [16, 19]],
  ['5018', [12, 13, 19]],
  ['6759', [12]],
  ['2201', [16]],
  ['508', [16]],
  ['506100', [16]],
  ['9792', [16]],
];

export function group(digits: string, sizes: readonly number[], sep: string): string {
  const out: string[] = [];
  let at = 0;
  for (const s of sizes) {
    if (at >= digits.length) break;
    out.push(digits.slice(at, at + s));
    at += s;
  }
  if (at < digits.length) out.push(digits.slice(at));
  return out.join(sep);
}

export const cardArb = fc
  .tuple(fc.constantFrom(...BRANDS), fc.nat(), digitsArb(18), fc.constantFrom('', ' ', '-'))
  .map(([[prefix, lengths], pick, rest, sep]) => {
    const n = lengths[pick % lengths.length];
    const body = (prefix + rest).slice(0, n - 1);
    const card = body + luhnDigit(body);
    return { card, n, sep };
  })
  // A 12-13 digit number in one group that passes the GTIN check digit is read as a barcode.
  .filter(({ card, sep }) => sep !== '' || !isGtinDigits(card, 0, card.length))
  .map(({ card, n, sep }) => {
    if (sep === '') return card;
    // 4-6-5 / 4-6-4 for 15 and 14 digits, groups of four otherwise.
    return n === 15 || n === 14 ? group(card, [4, 6], sep) : group(card, [4, 4, 4, 4], sep);
  });

export const ssnArb = fc
  .tuple(fc.integer({ min: 1, max: 899 }), fc.integer({ min: 1, max: 99 }), fc.integer({ min: 1, max: 9999 }), fc.constantFrom('-', ' '))
  .filter(([a]) => a !== 666)
  .map(([a, g, s, sep]) => `${String(a).padStart(3, '0')}${sep}${String(g).padStart(2, '0')}${sep}${String(s).padStart(4, '0')}`)
  .filter((v) => v.replace(/\D/g, '') !== '078051120' && v.replace(/\D/g, '') !== '219099999');

const nanpCode = (area: boolean) =>
  fc.tuple(fc.integer({ min: 2, max: 9 }), fc.integer({ min: 0, max: area ? 8 : 9 }), fc.integer({ min: 0, max: 9 })).filter(([, b, c]) => !(b === 1 && c === 1)).map((d) => d.join(''));

export const phoneArb = fc.oneof(
  fc.tuple(nanpCode(true), nanpCode(false), digitsArb(4), fc.constantFrom(0, 1, 2, 3, 4, 5)).map(([a, e, l, form]) =>
    [`(${a}) ${e}-${l}`, `${a}-${e}-${l}`, `${a}.${e}.${l}`, `${a} ${e} ${l}`, `1-${a}-${e}-${l}`, `+1 ${a} ${e} ${l}`][form],
  ),
  fc.tuple(fc.constantFrom('44 20', '49 30', '33 1', '81 3', '353 1', '7 912', '1 123'), digitsArb(8), fc.constantFrom('+', '00')).map(
    ([cc, rest, prefix]) => `${prefix}${cc} ${rest.slice(0, 4)} ${rest.slice(4)}`,
  ),
  fc.tuple(fc.integer({ min: 1, max: 9 }), digitsArb(9)).map(([a, rest]) => `0${a}${rest.slice(0, 1)} ${rest.slice(1, 5)} ${rest.slice(5)}`),
);

export const emailArb = fc
  .tuple(fc.stringMatching(/^[a-z][a-z0-9]{1,9}(\.[a-z]{1,6})?$/), fc.constantFrom('example.com', 'mail.example.org', 'corp.example.co.uk'))
  .map(([local, domain]) => `${local}@${domain}`);

/** mod 97 of a digit string (letters as their ISO 13616 numbers). */
function mod97(s: string): number {
  let r = 0;
  for (const ch of s) {
    const v = ch >= 'A' ? ch.charCodeAt(0) - 55 : ch.charCodeAt(0) - 48;
    r = v >= 10 ? (r * 100 + v) % 97 : (r * 10 + v) % 97;
  }
  return r;
}

export const ibanArb = fc.tuple(fc.constantFrom(['DE', 18], ['FR', 23], ['NL', 14], ['ES', 20]), digitsArb(23), fc.boolean()).map(([[cc, bban], digits, spaced]) => {
  let body = digits.slice(0, bban as number);
  if (cc === 'NL') body = `ABNA${body.slice(0, 10)}`;
  if (cc === 'FR') body = `${body.slice(0, 21)}${String(97 - (Number(`${body.slice(0, 21)}00`.slice(-9)) % 97) % 97).padStart(2, '0')}`.slice(0, 23);
  const check = String(98 - mod97(`${body}${cc}00`)).padStart(2, '0');
  const iban = `${cc}${check}${body}`;
  return spaced ? group(iban, [4, 4, 4, 4, 4, 4, 4, 4], ' ') : iban;
});

export const ipv4Arb = fc.tuple(fc.integer({ min: 1, max: 255 }), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));

export const ipv6Arb = fc.oneof(
  fc.constant('::1'),
  fc.constantFrom('::ffff:192.0.2.1', '2001:DB8::1', '2001:0db8:0000:0000:0000:0000:0000:0001', 'fe80::1', '2001:db8:0:0::1'),
  fc.tuple(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }), fc.boolean(), fc.boolean()).map(([g, upper, pad]) => {
    const text = g.map((x) => (pad ? x.toString(16).padStart(4, '0') : x.toString(16))).join(':');
    return upper ? text.toUpperCase() : text;
  }),
  fc.tuple(fc.integer({ min: 0x2000, max: 0x3fff }), fc.integer({ min: 1, max: 0xffff }), fc.integer({ min: 1, max: 0xffff })).map(([a, b, c]) => `${a.toString(16)}:${b.toString(16)}::${c.toString(16)}`),
);

export const KIND_ARBS = { card: cardArb, ssn: ssnArb, phone: phoneArb, email: emailArb, iban: ibanArb, ipv4: ipv4Arb, ipv6: ipv6Arb } as const;

export const valueArb = fc.oneof(cardArb, ssnArb, phoneArb, emailArb, ibanArb, ipv4Arb, ipv6Arb);

/** What may stand next to a value: digit groups, separators, punctuation, words, other values. */
export const neighbourArb = fc.oneof(
  digitsArb(1),
  digitsArb(3),
  digitsArb(4),
  fc.constantFrom('123', '24/7', '2024', '1', '0', '12', 'x', 'CVV', 'tel', 'ok', '(', ')', '.', ',', ';', ':', '/', '-', '+', '#', '"', "'"),
  valueArb,
);

export const separatorArb = fc.constantFrom(' ', ' ', ' ', '-', '.', ', ', ': ', '/', '\n', ' (', ') ', '\u00a0', '');

/** A text of values and neighbours in random order, joined by random separators. */
export const textArb = fc
  .tuple(fc.array(fc.oneof({ weight: 2, arbitrary: valueArb }, { weight: 3, arbitrary: neighbourArb }), { minLength: 1, maxLength: 8 }), fc.array(separatorArb, { minLength: 8, maxLength: 8 }))
  .map(([pieces, seps]) => pieces.map((p, i) => (i === 0 ? p : seps[i - 1] + p)).join(''));
