// A labelled corpus for the content detectors: seeded, so every run sees the same few thousand
// records. Each record is a sentence of filler words with real-format values (labelled with their
// kind and exact span) and near-miss decoys (labelled as nothing): Luhn-valid numbers with no card
// prefix or the wrong length, IBANs with a wrong check digit, SSNs in reserved areas, dates, times,
// versions, order and tracking numbers, ISBNs, hashes, MAC addresses, addresses without a domain,
// numbers written with typographic spaces and dashes.

import { rng } from '../helpers/rng.ts';
import { ibanCountries } from '../../src/detect/iban.ts';
import type { DetectKind } from '../../src/detect/kinds.ts';

export interface LabelledSpan {
  readonly start: number;
  readonly end: number;
  readonly kind: DetectKind;
}

export interface CorpusRecord {
  readonly text: string;
  readonly spans: readonly LabelledSpan[];
}

type Rand = () => number;

const int = (r: Rand, min: number, max: number): number => min + Math.floor(r() * (max - min + 1));
const pick = <T>(r: Rand, list: readonly T[]): T => list[Math.floor(r() * list.length)];
const digits = (r: Rand, n: number): string => Array.from({ length: n }, () => String(int(r, 0, 9))).join('');

function luhnCheckDigit(body: string): string {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = body.charCodeAt(body.length - 1 - i) - 48;
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return String((10 - (sum % 10)) % 10);
}

const withLuhn = (body: string): string => body + luhnCheckDigit(body);

function cardPrefix(r: Rand): [string, number] {
  switch (int(r, 0, 8)) {
    case 0:
    case 1:
      return ['4', pick(r, [16, 16, 16, 19])];
    case 2:
      return [String(int(r, 51, 55)), 16];
    case 3:
      return [String(int(r, 2221, 2720)), 16];
    case 4:
      return [pick(r, ['34', '37']), 15];
    case 5:
      return [pick(r, ['6011', '65', String(int(r, 644, 649))]), 16];
    case 6:
      return [String(int(r, 3528, 3589)), 16];
    case 7:
      return [pick(r, ['36', '38', String(int(r, 300, 305))]), 14];
    default:
      return ['62', pick(r, [16, 19])];
  }
}

/**
 * Separators word processors and typesetting put between digit groups: no-break, narrow no-break,
 * thin and figure spaces; en and em dashes, the figure dash and the minus sign.
 */
const TYPOGRAPHIC_SEPARATORS = ['\u00A0', '\u202F', '\u2009', '\u2007', '\u2013', '\u2014', '\u2012', '\u2212'];

/** Card digits written as people write them: together, in fours, or Amex/Diners 4-6-5 / 4-6-4. */
function writeCard(r: Rand, d: string): string {
  const style = int(r, 0, 2);
  if (style === 0) return d;
  const sep = r() < 0.15 ? pick(r, TYPOGRAPHIC_SEPARATORS) : style === 1 ? ' ' : '-';
  if (d.length === 15 || d.length === 14) return [d.slice(0, 4), d.slice(4, 10), d.slice(10)].join(sep);
  return d.match(/.{1,4}/g)!.join(sep);
}

function card(r: Rand): string {
  const [prefix, length] = cardPrefix(r);
  const d = withLuhn(prefix + digits(r, length - prefix.length - 1));
  // Out of scope, kept so recall is measured honestly: groups joined by dots.
  if (r() < 0.005) return d.match(/.{1,4}/g)!.join('.');
  return writeCard(r, d);
}

const NAMES = ['jane', 'john', 'maria', 'li', 'ahmed', 'olga', 'pierre', 'sofia', 'kwame', 'yuki', 'tomasz', 'ana'];
const SURNAMES = ['doe', 'smith', 'garcia', 'wu', 'khan', 'ivanova', 'dubois', 'rossi', 'mensah', 'tanaka', 'nowak', 'silva'];
const DOMAINS = ['example.com', 'mail.example.org', 'corp.example.co.uk', 'example.de', 'uni-example.edu', 'xn--bcher-kva.example', 'example.io'];

function email(r: Rand): string {
  const first = pick(r, NAMES);
  const last = pick(r, SURNAMES);
  if (r() < 0.005) return `${first}.o'${last}@${pick(r, DOMAINS)}`; // out of scope in text: an apostrophe
  const local = pick(r, [`${first}.${last}`, `${first}_${last}${int(r, 1, 99)}`, `${first[0]}${last}`, `${first}+news`, `${first}.${last}-${int(r, 1, 9)}`, `${first}${last}`.toUpperCase()]);
  return `${local}@${pick(r, DOMAINS)}`;
}

function nanp(r: Rand): string {
  let area = '';
  do area = `${int(r, 2, 9)}${int(r, 0, 8)}${int(r, 0, 9)}`;
  while (area[1] === '1' && area[2] === '1');
  let exchange = '';
  do exchange = `${int(r, 2, 9)}${digits(r, 2)}`;
  while (exchange[1] === '1' && exchange[2] === '1');
  const line = digits(r, 4);
  if (r() < 0.05) return `${area}\u2013${exchange}\u2013${line}`; // en dashes
  return pick(r, [`(${area}) ${exchange}-${line}`, `${area}-${exchange}-${line}`, `${area}.${exchange}.${line}`, `${area} ${exchange} ${line}`, `1-${area}-${exchange}-${line}`, `+1 ${area} ${exchange} ${line}`, `+1 (${area}) ${exchange}-${line}`, `+1${area}${exchange}${line}`]);
}

function phone(r: Rand): string {
  if (r() < 0.03) return nanp(r).replace(/\D/g, '').slice(-10); // ten bare digits (detected since issue 17)
  switch (int(r, 0, 3)) {
    case 0:
    case 1:
      return nanp(r);
    case 2:
      return pick(r, [`+44 20 ${digits(r, 4)} ${digits(r, 4)}`, `+49 30 ${digits(r, 7)}`, `+33 1 ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)}`, `+91 ${digits(r, 5)} ${digits(r, 5)}`, `+353 1 ${digits(r, 3)} ${digits(r, 4)}`, `0044 20 ${digits(r, 4)} ${digits(r, 4)}`]);
    default:
      return pick(r, [`020 ${digits(r, 4)} ${digits(r, 4)}`, `0${int(r, 1, 9)} ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)}`, `030 ${digits(r, 7)}`, `07${digits(r, 3)} ${digits(r, 6)}`]);
  }
}

const COUNTRIES = [...ibanCountries()].filter(([, c]) => c.bban !== undefined);

/** A BBAN matching the registry pattern (sequences of `[class]{n}`). */
function bban(r: Rand, pattern: string): string {
  let out = '';
  for (const m of pattern.matchAll(/\[([^\]]+)\]\{(\d+)\}/g)) {
    const cls = m[1];
    const alphabet = (cls.includes('0-9') ? '0123456789' : '') + (cls.includes('A-Z') ? 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' : '');
    for (let k = 0; k < Number(m[2]); k++) out += alphabet[int(r, 0, alphabet.length - 1)];
  }
  return out;
}

function mod97(s: string): number {
  let rest = 0;
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    rest = c >= 65 ? (rest * 100 + c - 55) % 97 : (rest * 10 + c - 48) % 97;
  }
  return rest;
}

function ibanCompact(r: Rand): string {
  const [country, spec] = pick(r, COUNTRIES);
  const b = bban(r, spec.bban!);
  const check = String(98 - mod97(`${b}${country}00`)).padStart(2, '0');
  return `${country}${check}${b}`;
}

const printIban = (r: Rand, compact: string): string =>
  r() < 0.5 ? compact : compact.match(/.{1,4}/g)!.join(r() < 0.15 ? pick(r, ['\u00A0', '\u202F']) : ' ');

function ssn(r: Rand): string {
  let area = 0;
  do area = int(r, 1, 899);
  while (area === 666);
  const d = `${String(area).padStart(3, '0')}${String(int(r, 1, 99)).padStart(2, '0')}${String(int(r, 1, 9999)).padStart(4, '0')}`;
  if (r() < 0.03) return d; // out of scope: nine bare digits
  const sep = r() < 0.8 ? '-' : ' ';
  return `${d.slice(0, 3)}${sep}${d.slice(3, 5)}${sep}${d.slice(5)}`;
}

function ip(r: Rand): string {
  if (r() < 0.6) return [int(r, 1, 223), int(r, 0, 255), int(r, 0, 255), int(r, 1, 254)].join('.');
  const groups = Array.from({ length: 8 }, () => int(r, 0, 0xffff).toString(16));
  switch (int(r, 0, 2)) {
    case 0:
      return groups.join(':');
    case 1:
      return `2001:db8::${groups[6]}:${groups[7]}`;
    default:
      return `fe80::${groups[5]}:${groups[6]}:${groups[7]}`;
  }
}

const GENERATORS: Record<DetectKind, (r: Rand) => string> = {
  card,
  email,
  phone,
  // Out of scope at 0.5%: an IBAN written in lower case.
  iban: (r) => (r() < 0.005 ? ibanCompact(r).toLowerCase() : printIban(r, ibanCompact(r))),
  ssn,
  ipAddress: ip,
};

/** Near misses: things that look like a kind but are not one. */
const DECOYS: readonly ((r: Rand) => string)[] = [
  // Luhn-valid, card length, but no issuer prefix (order numbers, account ids).
  (r) => withLuhn(pick(r, ['7', '0', '83', '99']) + digits(r, 13)),
  // Card prefix and length, Luhn wrong.
  (r) => {
    const c = withLuhn('4' + digits(r, 14));
    return c.slice(0, 15) + String((Number(c[15]) + int(r, 1, 9)) % 10);
  },
  // Luhn-valid with a Visa prefix but a length no brand issues.
  (r) => withLuhn('4' + digits(r, pick(r, [10, 13, 16]))),
  // Card digits with mixed separators.
  (r) => {
    const c = withLuhn('4' + digits(r, 14));
    return `${c.slice(0, 4)}-${c.slice(4, 8)} ${c.slice(8, 12)}-${c.slice(12)}`;
  },
  // IBAN with a wrong check digit / an unknown country.
  (r) => {
    const c = ibanCompact(r);
    const i = int(r, 4, c.length - 1);
    const ch = c[i];
    const swapped = /[0-9]/.test(ch) ? String((Number(ch) + int(r, 1, 9)) % 10) : ch === 'A' ? 'B' : 'A';
    return c.slice(0, i) + swapped + c.slice(i + 1);
  },
  (r) => `XK${digits(r, 2)}${digits(r, 16)}`.replace(/^XK/, pick(r, ['QQ', 'ZZ', 'XY'])),
  // SSNs in reserved ranges.
  (r) => pick(r, [`000-${digits(r, 2)}-${digits(r, 4)}`, `666-${digits(r, 2)}-${digits(r, 4)}`, `9${digits(r, 2)}-${digits(r, 2)}-${digits(r, 4)}`, `${int(r, 100, 899)}-00-${digits(r, 4)}`, `${int(r, 100, 665)}-${int(r, 10, 99)}-0000`]),
  // Dates, times, versions, money, ranges.
  (r) => `${int(r, 1990, 2030)}-${String(int(r, 1, 12)).padStart(2, '0')}-${String(int(r, 1, 28)).padStart(2, '0')}`,
  (r) => `${String(int(r, 0, 23)).padStart(2, '0')}:${String(int(r, 0, 59)).padStart(2, '0')}:${String(int(r, 0, 59)).padStart(2, '0')}`,
  (r) => `v${int(r, 1, 9)}.${int(r, 0, 20)}.${int(r, 0, 99)}`,
  (r) => `${int(r, 1, 9)}.${int(r, 0, 9)}.${int(r, 0, 9)}.${int(r, 0, 9)}.${int(r, 0, 9)}`,
  (r) => `$${int(r, 1, 999)},${digits(r, 3)}.${digits(r, 2)}`,
  (r) => `${int(r, 256, 999)}.${int(r, 0, 255)}.${int(r, 0, 255)}.${int(r, 0, 255)}`,
  // Phone-like numbers that are not phones.
  (r) => `1${digits(r, 2)}-${int(r, 2, 9)}${digits(r, 2)}-${digits(r, 4)}`,
  (r) => `${int(r, 2, 9)}${digits(r, 2)}-1${digits(r, 2)}-${digits(r, 4)}`,
  (r) => `${int(r, 10000, 99999)}-${digits(r, 4)}`,
  (r) => `+${pick(r, ['0', '28', '42', '80'])}${digits(r, 1)} ${digits(r, 3)}`,
  // Ten bare digits that are no NANP number (area code 0xx/1xx); NANP-valid ones are phones (issue 17).
  (r) => `${int(r, 0, 1)}${digits(r, 9)}`,
  // Ids, hashes, tracking numbers, ISBNs, UUIDs, MAC addresses.
  (r) => `ORD${digits(r, 12)}`,
  (r) => `1Z${digits(r, 3)}AA${digits(r, 10)}`,
  (r) => `978-${int(r, 0, 1)}-${digits(r, 3)}-${digits(r, 5)}-${digits(r, 1)}`,
  (r) => Array.from({ length: 32 }, () => '0123456789abcdef'[int(r, 0, 15)]).join(''),
  (r) => '8-4-4-4-12'.split('-').map((n) => Array.from({ length: Number(n) }, () => '0123456789abcdef'[int(r, 0, 15)]).join('')).join('-'),
  (r) => Array.from({ length: 6 }, () => digits(r, 1) + 'abcdef'[int(r, 0, 5)]).join(':'),
  (r) => `${int(r, 1, 9)}${digits(r, 11)}`,
  // Addresses that are not email addresses.
  (r) => `${pick(r, NAMES)}@localhost`,
  (r) => `@${pick(r, NAMES)}_${pick(r, SURNAMES)}`,
  (r) => `${pick(r, NAMES)}..${pick(r, SURNAMES)}@example.com`,
  (r) => `${pick(r, NAMES)}@example.c`,
  // Typographic separators around numbers that are no value: ranges, thousands, a card failing Luhn.
  (r) => `${int(r, 1990, 2020)}\u2013${int(r, 2021, 2030)}`,
  (r) => `${int(r, 1, 999)}\u202F${digits(r, 3)}\u202F${digits(r, 3)},${digits(r, 2)}`,
  (r) => `${int(r, 1, 99)}\u00A0${digits(r, 3)}\u00A0${digits(r, 3)}`,
  (r) => {
    const c = withLuhn('4' + digits(r, 14));
    return c.slice(0, 15) + String((Number(c[15]) + int(r, 1, 9)) % 10);
  },
  (r) => `1${digits(r, 2)}\u2013${int(r, 2, 9)}${digits(r, 2)}\u2013${digits(r, 4)}`,
  // After a dash: Luhn-valid ids without a brand prefix, a card-prefixed number failing Luhn.
  (r) => `ORD-${withLuhn(pick(r, ['1', '7', '0', '83', '99']) + digits(r, 14))}`,
  (r) => {
    const c = withLuhn('4' + digits(r, 14));
    return `${int(r, 10, 99)}-${c.slice(0, 15)}${(Number(c[15]) + int(r, 1, 9)) % 10}`;
  },
];

const FILLER = ['please', 'update', 'the', 'record', 'for', 'customer', 'called', 'about', 'invoice', 'ref', 'on', 'file', 'new', 'contact', 'and', 'note', 'see', 'ticket', 'order', 'shipped', 'today', 'via', 'account'];
const LEAD = ['', 'card ', 'tel ', 'mail ', 'IBAN ', 'ssn: ', 'ip=', '(', 'at ', '- '];
const TRAIL = ['', '.', ',', ';', ')', '!', ' ok'];

/** `count` records, each with 1-6 pieces: values of every kind and decoys, amid filler words. */
export function buildCorpus(seed = 20241122, count = 3000): CorpusRecord[] {
  const r = rng(seed);
  const kinds = Object.keys(GENERATORS) as DetectKind[];
  const records: CorpusRecord[] = [];
  for (let n = 0; n < count; n++) {
    let text = '';
    const spans: LabelledSpan[] = [];
    const pieces = int(r, 1, 6);
    for (let p = 0; p < pieces; p++) {
      text += (text ? ' ' : '') + Array.from({ length: int(r, 1, 4) }, () => pick(r, FILLER)).join(' ') + ' ' + pick(r, LEAD);
      if (r() < 0.55) {
        const kind = kinds[n % kinds.length === p % kinds.length ? n % kinds.length : int(r, 0, kinds.length - 1)];
        const value = GENERATORS[kind](r);
        // A card glued to a number by a dash (`ref 12-4111…`): the card alone is the value. (A card
        // written with dashes itself after a dash is refused: `12-4111-1111-…` reads as one code.)
        if (kind === 'card' && r() < 0.05 && !/[-.\u2012-\u2014\u2212]/.test(value)) text += `${int(r, 1, 99)}-`;
        spans.push({ start: text.length, end: text.length + value.length, kind });
        text += value;
      } else {
        text += pick(r, DECOYS)(r);
      }
      text += pick(r, TRAIL);
    }
    records.push({ text, spans });
  }
  return records;
}
