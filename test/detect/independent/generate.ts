// An independent labelled corpus for the content detectors (issue 17, item 6): values come from
// generator libraries (@faker-js/faker with a fixed seed; libphonenumber-js's example numbers of
// every region, varied and re-validated by libphonenumber-js itself), not from the detectors' own
// definitions, and each is written the ways people and systems write it. Hard negatives are things
// that carry digits and are not personal data: order ids, UUIDs, timestamps, tracking numbers,
// EAN-13/UPC barcodes, ISBNs, versions, prices, SKUs, paths and URLs.
//
// What is deliberately left out is listed in OUT_OF_SCOPE below (and in docs/detection.md), with
// the rule; nothing is left out case by case.

import { Faker, base, de, en, en_GB, es, fr, it as itLocale, nl, pt_BR, ru } from '@faker-js/faker';
import { getCountries, parsePhoneNumberWithError, type CountryCode } from 'libphonenumber-js/max';
import { createRequire } from 'node:module';
import type { DetectKind } from '../../../src/detect/kinds.ts';

const examples = createRequire(import.meta.url)('libphonenumber-js/examples.mobile.json') as Record<string, string>;

export interface LabelledSpan {
  readonly start: number;
  readonly end: number;
  readonly kind: DetectKind;
}

export interface LabelledText {
  readonly text: string;
  readonly spans: readonly LabelledSpan[];
}

/** Regions whose national writings the corpus uses; the scanner is configured with the same list. */
export const CORPUS_REGIONS: readonly CountryCode[] = ['US', 'CA', 'GB', 'DE', 'FR', 'BE', 'NL', 'ES', 'IT', 'BR', 'RU', 'JP', 'IN', 'AU', 'IL', 'MX', 'CN'];

/** Writings left out of the corpus, by rule (docs/detection.md "Not detected"). */
export const OUT_OF_SCOPE: readonly string[] = [
  'a bare 9-digit number with no SSN context word before it (an SSN or any other id: nothing tells them apart)',
  'a national phone writing of a region not configured in `detect.regions` (only international `+`/`00` writings are region-free)',
  'Visa 13-digit numbers (no longer issued; indistinguishable from EAN-13 barcodes with a German GS1 prefix)',
  'card brands withdrawn before 2015 (Switch, Solo, Laser): no maintained brand table lists them',
];

class Builder {
  text = '';
  readonly spans: LabelledSpan[] = [];
  add(s: string): void {
    this.text += s;
  }
  value(s: string, kind: DetectKind): void {
    this.spans.push({ start: this.text.length, end: this.text.length + s.length, kind });
    this.text += s;
  }
}

type Piece = (b: Builder) => void;

export function buildIndependentCorpus(seed = 20261126, records = 3600): LabelledText[] {
  const f = new Faker({ locale: [en, base], seed });
  const locales = [de, fr, es, itLocale, nl, pt_BR, ru, en_GB].map((l) => new Faker({ locale: [l, en, base], seed: seed + 1 }));
  const pick = <T>(xs: readonly T[]): T => xs[f.number.int(xs.length - 1)];
  const chance = (p: number): boolean => f.number.float({ min: 0, max: 1 }) < p;
  const digits = (n: number): string => f.string.numeric({ length: n, allowLeadingZeros: true });

  // ---- values ----------------------------------------------------------------------------
  const luhnComplete = (body: string): string => {
    let sum = 0;
    for (let i = body.length - 1, dbl = true; i >= 0; i--, dbl = !dbl) {
      let d = body.charCodeAt(i) - 48;
      if (dbl) ((d *= 2), d > 9 && (d -= 9));
      sum += d;
    }
    return body + ((10 - (sum % 10)) % 10);
  };
  /** Faker's own issuers, and brands faker has no data for, from their published IIN and length. */
  const cardPatterns = [
    () => f.finance.creditCardNumber('visa'),
    () => f.finance.creditCardNumber('mastercard'),
    () => f.finance.creditCardNumber('american_express'),
    () => f.finance.creditCardNumber('discover'),
    () => f.finance.creditCardNumber('diners_club'),
    () => f.finance.creditCardNumber('jcb'),
    () => f.finance.creditCardNumber('1###-#####-#####L'), // UATP (IIN 1, 15 digits, 4-5-6)
    () => f.finance.creditCardNumber('5019-####-####-###L'), // Dankort (5019, 16)
    () => f.finance.creditCardNumber('6759-####-####-###L'), // Maestro UK (6759)
    () => f.finance.creditCardNumber('62##-####-####-###L'), // UnionPay (62, 16)
    () => f.finance.creditCardNumber('62##-####-####-####-##L'), // UnionPay (62, 19)
    () => f.finance.creditCardNumber('220[0-4]-####-####-###L'), // Mir (2200-2204)
  ];
  const card = (): string => {
    let raw = pick(cardPatterns)();
    const compact = raw.replace(/\D/g, '');
    if (compact.length === 13 && compact[0] === '4') raw = luhnComplete('4' + digits(14)); // see OUT_OF_SCOPE
    const c = raw.replace(/\D/g, '');
    const amexLike = c.length === 15 && /^3[47]/.test(c);
    const style = f.number.int(4);
    if (style === 0) return c;
    const sep = pick([' ', '-', ' ', '\u00a0']);
    if (amexLike && chance(0.7)) return [c.slice(0, 4), c.slice(4, 10), c.slice(10)].join(sep);
    if (c.length === 14 && chance(0.5)) return [c.slice(0, 4), c.slice(4, 10), c.slice(10)].join(sep);
    if (c.length === 15 && c[0] === '1' && chance(0.5)) return [c.slice(0, 4), c.slice(4, 9), c.slice(9)].join(sep);
    return c.match(/.{1,4}/g)!.join(sep);
  };

  const idnDomains = ['bücher.de', 'münchen-reisen.de', 'café-olé.fr', 'españa-viajes.es', 'zürich.ch', 'øl.dk', 'пример.рф', 'köln.example.com', 'straße.info'];
  const email = (): string => {
    if (chance(0.08)) return `${f.internet.username().replace(/[^A-Za-z0-9._-]/g, '').replace(/^[._-]+|[._-]+$/g, '') || 'x'}@${pick(idnDomains)}`;
    const g = chance(0.5) ? f : pick(locales);
    return g.internet.email({ allowSpecialCharacters: false });
  };

  const ibanCountries = ['DE', 'FR', 'GB', 'ES', 'IT', 'NL', 'BE', 'AT', 'CH', 'PL', 'SE', 'DK', 'NO', 'FI', 'IE', 'PT', 'LU', 'CZ', 'HU', 'RO', 'GR', 'HR', 'SK', 'SI', 'LT', 'LV', 'EE', 'BG', 'CY', 'MT', 'TR', 'SA', 'AE', 'IL', 'BR'];
  const iban = (): string => {
    const compact = f.finance.iban({ formatted: false, countryCode: chance(0.7) ? pick(ibanCountries) : undefined });
    const style = f.number.int(5);
    if (style <= 1) return compact;
    if (style === 5) return compact.match(/.{1,4}/g)!.join('-');
    return compact.match(/.{1,4}/g)!.join(style === 4 ? '\u00a0' : ' ');
  };

  const ipv6Compressed = (): string => {
    const groups = f.internet.ipv6().split(':').map((g) => g.replace(/^0+(?=.)/, ''));
    const from = f.number.int(6);
    const len = f.number.int({ min: 2, max: from === 0 ? 7 : 8 - from }); // never all eight: `::` is no address of anyone
    const left = groups.slice(0, from).join(':');
    const right = groups.slice(from + len).join(':');
    return `${left}::${right}`;
  };
  const ip = (): string => {
    const r = f.number.int(9);
    if (r <= 3) return f.internet.ipv4();
    if (r === 4) return `${f.internet.ipv4()}/${f.number.int({ min: 8, max: 32 })}`;
    if (r === 5) return f.internet.ipv6();
    if (r === 6) return chance(0.3) ? ipv6Compressed().toUpperCase() : ipv6Compressed();
    if (r === 7) return `fe80::${f.string.hexadecimal({ length: 4, casing: 'lower', prefix: '' }).replace(/^0+(?=.)/, '')}%${pick(['eth0', 'en0', 'wlan1', '3'])}`;
    if (r === 8) return `${ipv6Compressed()}/${pick([32, 48, 56, 64, 128])}`;
    return `::ffff:${f.internet.ipv4()}`;
  };

  const ssnDigits = (): string => {
    for (;;) {
      const area = f.number.int({ min: 1, max: 899 });
      if (area === 666) continue;
      return String(area).padStart(3, '0') + String(f.number.int({ min: 1, max: 99 })).padStart(2, '0') + String(f.number.int({ min: 1, max: 9999 })).padStart(4, '0');
    }
  };

  // Phones: libphonenumber-js example numbers of every region, varied in their last digits and kept
  // only when libphonenumber-js still calls them valid.
  const regions = getCountries().filter((r) => (examples as Record<string, string>)[r] !== undefined);
  const phoneOf = (region: CountryCode) => {
    const example = (examples as Record<string, string>)[region];
    for (let tries = 0; tries < 8; tries++) {
      const keep = Math.max(2, example.length - 6);
      const candidate = example.slice(0, keep) + digits(example.length - keep);
      try {
        const p = parsePhoneNumberWithError(candidate, region);
        if (p.isValid()) return p;
      } catch {
        // not a number: try again
      }
    }
    return parsePhoneNumberWithError(example, region);
  };
  const phone = (): string => {
    const r = f.number.int(9);
    if (r <= 2) {
      // US numbers the way faker writes them (its en locale), kept when libphonenumber-js calls them valid.
      for (;;) {
        const raw = f.phone.number({ style: 'national' });
        const p = parsePhoneNumberWithError(raw, 'US');
        if (p.isValid()) return pick([raw, raw, p.formatNational(), p.nationalNumber, `${p.number.slice(2, 5)}-${p.number.slice(5, 8)}-${p.number.slice(8)}`, `${p.number.slice(2, 5)}.${p.number.slice(5, 8)}.${p.number.slice(8)}`]);
      }
    }
    if (r <= 5) {
      const p = phoneOf(pick(regions));
      return pick([p.formatInternational(), p.number, p.formatInternational().replace(/ /g, '-'), `00${p.number.slice(1)}`]);
    }
    const p = phoneOf(pick(CORPUS_REGIONS));
    return p.formatNational();
  };

  // ---- hard negatives ---------------------------------------------------------------------
  const gtinComplete = (body: string): string => {
    let sum = 0;
    for (let i = body.length - 1, w = 3; i >= 0; i--, w = 4 - w) sum += (body.charCodeAt(i) - 48) * w;
    return body + ((10 - (sum % 10)) % 10);
  };
  const uspsComplete = gtinComplete; // USPS IMpb check digit: the same mod-10, weights 3 and 1
  const negatives: (() => string)[] = [
    () => `ORD-${f.date.past().getFullYear()}-${digits(6)}`,
    () => `#${f.number.int({ min: 100000, max: 99999999 })}`,
    () => `order ${f.string.alphanumeric({ length: 2, casing: 'upper' })}${digits(8)}`,
    () => f.string.uuid(),
    () => f.date.past().toISOString(),
    () => f.date.past().toISOString().replace('T', ' ').slice(0, 19),
    () => String(Math.floor(f.date.past().getTime() / 1000)),
    () => String(f.date.past().getTime()),
    () => `1Z${f.string.alphanumeric({ length: 6, casing: 'upper' })}${digits(10)}`,
    () => gtinComplete(pick(['9400', '9205', '9407', '9270', '9361']) + digits(17)),
    () => gtinComplete(pick(['9400', '9205', '9407']) + digits(17)).match(/.{1,4}/g)!.join(' '),
    () => digits(12), // FedEx-style tracking number
    () => gtinComplete(pick(['40', '50', '54', '76', '80', '87', '30', '45', '49']) + digits(10)), // EAN-13
    () => gtinComplete(digits(11)), // UPC-A
    () => f.commerce.isbn(13),
    () => f.commerce.isbn(10),
    () => f.commerce.isbn(13).replace(/-/g, ''),
    () => f.system.semver(),
    () => `v${f.system.semver()}.${f.number.int(999)}`,
    () => `$${f.commerce.price({ min: 1000, max: 99999 })}`,
    () => `${f.number.int({ min: 1, max: 999 })} ${String(f.number.int(999)).padStart(3, '0')},${digits(2)} €`,
    () => `SKU-${digits(5)}-${pick(['XL', 'M', 'S'])}`,
    () => f.system.filePath(),
    () => f.internet.url() + `/items/${digits(10)}?page=${f.number.int(50)}`,
    () => `00${luhnComplete(digits(13))}`, // Luhn-valid order number starting 00
    () => f.finance.iban({ formatted: false }).replace(/.$/, (c) => String((Number(c) + 1) % 10)).match(/.{1,4}/g)!.join(' '), // an IBAN with a wrong check
    () => f.finance.accountNumber(8),
    () => `${f.number.int({ min: 1, max: 28 })}.${f.number.int({ min: 1, max: 12 })}.${f.date.past().getFullYear()}`,
    () => `${String(f.number.int(23)).padStart(2, '0')}:${String(f.number.int(59)).padStart(2, '0')}:${String(f.number.int(59)).padStart(2, '0')}`,
  ];

  // ---- contexts ---------------------------------------------------------------------------
  const labels: Record<DetectKind, readonly string[]> = {
    card: ['card', 'Card', 'cc', 'payment card', 'Kreditkarte', 'carte'],
    email: ['email', 'Email', 'mail', 'contact', 'E-Mail'],
    phone: ['phone', 'Phone', 'tel', 'Tel', 'mobile', 'call', 'Telefon'],
    iban: ['IBAN', 'iban', 'account', 'case', 'Konto'],
    ssn: ['SSN', 'ssn', 'social security number', 'Social Security Number', 'Code'],
    ipAddress: ['ip', 'IP', 'Node', 'host', 'client', 'addr'],
  };
  const wrap = (label: string, v: string, kind: DetectKind): Piece => {
    const style = f.number.int(8);
    return (b) => {
      if (style === 0) (b.add(`${label} `), b.value(v, kind), b.add('. '));
      else if (style === 1) (b.add(`${label}: `), b.value(v, kind), b.add(', '));
      else if (style === 2) (b.add(`${label}:`), b.value(v, kind), b.add(' '));
      else if (style === 3) (b.add(`"${label.replace(/ /g, '_')}": "`), b.value(v, kind), b.add('", '));
      else if (style === 4) (b.add(`${label}=`), b.value(v, kind), b.add('&'));
      else if (style === 5) (b.add(`<${label.replace(/ /g, '')}>`), b.value(v, kind), b.add(`</${label.replace(/ /g, '')}> `));
      else if (style === 6) (b.add(`${label} (`), b.value(v, kind), b.add(') '));
      else if (style === 7) (b.add(`${label} `), b.value(v, kind), b.add('\n'));
      else (b.value(v, kind), b.add(` is the ${label}; `));
    };
  };
  const ssnPiece = (): Piece => {
    const d = ssnDigits();
    if (chance(0.6)) return wrap(pick(labels.ssn), chance(0.8) ? `${d.slice(0, 3)}-${d.slice(3, 5)}-${d.slice(5)}` : `${d.slice(0, 3)} ${d.slice(3, 5)} ${d.slice(5)}`, 'ssn');
    // A bare nine-digit SSN, with the context word right before it (Presidio's rule).
    const label = pick(['SSN', 'SSN:', 'ssn#', 'social security number', 'Social Security No.', 'social security', '"ssn":', 'ssn=']);
    const quoted = label.startsWith('"');
    return (b) => {
      b.add(`${label}${label.endsWith('=') ? '' : ' '}${quoted ? '"' : ''}`);
      b.value(d, 'ssn');
      b.add(quoted ? '", ' : ' ');
    };
  };
  const positive = (): Piece => {
    const r = f.number.int(99);
    if (r < 20) return wrap(pick(labels.card), card(), 'card');
    if (r < 37) return wrap(pick(labels.email), email(), 'email');
    if (r < 57) return wrap(pick(labels.phone), phone(), 'phone');
    if (r < 72) return wrap(pick(labels.iban), iban(), 'iban');
    if (r < 84) return ssnPiece();
    return wrap(pick(labels.ipAddress), ip(), 'ipAddress');
  };
  const negativeLabels = ['ref', 'order', 'tracking', 'barcode', 'ISBN', 'version', 'price', 'id', 'at', 'see', 'sku', 'path', 'link', 'build', 'item'];
  const negative = (): Piece => {
    const v = pick(negatives)();
    return (b) => b.add(`${pick(negativeLabels)} ${v}${pick([' ', '. ', ', ', '\n'])}`);
  };
  const filler = (): string => pick(['', '', f.lorem.sentence() + ' ', f.hacker.phrase() + ' ', `${f.person.firstName()} wrote: `, 'Hi, ', '\t']);

  const out: LabelledText[] = [];
  for (let i = 0; i < records; i++) {
    const b = new Builder();
    const pieces = f.number.int({ min: 1, max: 4 });
    for (let k = 0; k < pieces; k++) {
      b.add(filler());
      (chance(0.55) ? positive() : negative())(b);
    }
    b.add(filler());
    out.push({ text: b.text, spans: b.spans });
  }
  return out;
}
