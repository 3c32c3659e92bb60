// Issue 12's "done when": the default `customer` manifest pseudonymises every record of a realistic
// generated customer table — short names and emails included — and Reconstruct gives every record
// back exactly, as a JSON document and as tabular rows (the batched path gRPC and CSV take). Names
// and birth dates come under their common field names too (firstName, surname, dob, birthDate…):
// none of them is left in clear by any job type.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { testEngine, job } from '../helpers/engine.ts';
import { rng } from '../helpers/rng.ts';

const engine = testEngine();

const FIRST = ['Jane', 'John', 'Li', 'Bo', 'Al', 'Ann', 'Mary-Jane', 'Émile', 'Zoë', 'Wei', 'Jo', 'Christopher', 'Ng', 'Eva', 'Sam', 'Oluwaseun', 'Ida', 'Yi'];
const LAST = ['Doe', 'Wu', "O'Ng", 'Smith', 'Li', 'Zola', 'Ng', 'García', 'Ek', 'Van der Berg', 'Kowalski', 'Ma', 'Øst', 'Lee', 'Ito'];
const DOMAINS = ['example.com', 'mail.example.org', 'ex.io'];
const IBAN_BBANS: Record<string, () => string> = {
  DE: () => digits(18),
  GB: () => `WEST${digits(14)}`,
  FR: () => `${digits(10)}${upper(1)}${digits(12)}`.slice(0, 23),
  NL: () => `ABNA${digits(10)}`,
  NO: () => digits(11),
};

let next = rng(20261122);
const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
const digits = (n: number) => Array.from({ length: n }, () => Math.floor(next() * 10)).join('');
const upper = (n: number) => Array.from({ length: n }, () => String.fromCharCode(65 + Math.floor(next() * 26))).join('');
const ascii = (s: string) => s.normalize('NFD').replace(/[^A-Za-z0-9.]/g, '').toLowerCase();

function luhnComplete(body: string): string {
  for (let d = 0; d < 10; d++) {
    const card = body + d;
    let sum = 0;
    for (let i = 0; i < card.length; i++) {
      let x = Number(card[card.length - 1 - i]);
      if (i % 2 === 1) x = x * 2 > 9 ? x * 2 - 9 : x * 2;
      sum += x;
    }
    if (sum % 10 === 0) return card;
  }
  throw new Error('unreachable');
}

function mod97(text: string): number {
  let rest = 0;
  for (const ch of text) rest = /\d/.test(ch) ? (rest * 10 + Number(ch)) % 97 : (rest * 100 + ch.charCodeAt(0) - 55) % 97;
  return rest;
}

function iban(): string {
  const country = pick(Object.keys(IBAN_BBANS));
  const bban = IBAN_BBANS[country]!();
  const check = String(98 - mod97(`${bban}${country}00`)).padStart(2, '0');
  const compact = `${country}${check}${bban}`;
  return next() < 0.5 ? compact : compact.replace(/(.{4})(?=.)/g, '$1 ');
}

function email(first: string, last: string): string {
  const f = ascii(first);
  const l = ascii(last);
  const local = pick([`${f}.${l}`, `${f[0]}.${l}`, f, `${f}${digits(2)}`, `${f[0]}${l[0]}`, `${f}+news`, `${l}_${f[0]}`, f[0]!]);
  return `${next() < 0.1 ? local.toUpperCase() : local}@${pick(DOMAINS)}`;
}

function phone(): string {
  return pick([
    () => `+1 ${digits(3)}-555-${digits(4)}`,
    () => `(${digits(3)}) ${digits(3)}-${digits(4)}`,
    () => `+44 20 ${digits(4)} ${digits(4)}`,
    () => digits(4), // an extension
    () => `+33 ${digits(1)} ${digits(2)} ${digits(2)} ${digits(2)} ${digits(2)}`,
    () => digits(3), // 112, 911
  ])();
}

function card(): string {
  if (next() < 0.05) return digits(4); // only the last 4 kept by the source system
  const number = luhnComplete(`${pick(['4', '51', '37', '6011'])}${digits(next() < 0.2 ? 10 : 14)}`.slice(0, next() < 0.2 ? 14 : 15));
  return next() < 0.5 ? number : number.replace(/(\d{4})(?=\d)/g, '$1 ');
}

function date(): string {
  const d = new Date(Date.UTC(1930 + Math.floor(next() * 75), Math.floor(next() * 12), 1 + Math.floor(next() * 28)));
  const iso = d.toISOString().slice(0, 10);
  return next() < 0.7 ? iso : `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)}`;
}

interface Customer {
  id: number;
  name: string;
  firstName: string;
  lastName: string;
  fullName: string;
  givenName: string;
  familyName: string;
  surname: string;
  middleName: string;
  email: string;
  phone: string;
  cardNumber: string;
  ssn: string;
  iban: string;
  dateOfBirth: string;
  dob: string;
  birthDate: string;
  salary: number;
}

function customers(count: number): Customer[] {
  next = rng(20261122);
  return Array.from({ length: count }, (_, i) => {
    const first = pick(FIRST);
    const last = pick(LAST);
    const middle = pick(FIRST);
    return {
      id: i + 1,
      name: pick([`${first} ${last}`, first, `${first[0]}. ${last}`, last.toUpperCase()]),
      firstName: first,
      lastName: last,
      fullName: `${first} ${last}`,
      givenName: first,
      familyName: last.toUpperCase(),
      surname: last,
      middleName: next() < 0.5 ? middle : middle[0]!,
      email: email(first, last),
      phone: phone(),
      cardNumber: card(),
      ssn: next() < 0.85 ? `${digits(3)}-${digits(2)}-${digits(4)}` : digits(4),
      iban: iban(),
      dateOfBirth: date(),
      dob: date(),
      birthDate: date(),
      salary: 20_000 + Math.floor(next() * 180_000),
    };
  });
}

const TABLE = customers(3000);
const NAMES = ['name', 'firstName', 'lastName', 'fullName', 'givenName', 'familyName', 'surname', 'middleName'] as const;
const BIRTH_DATES = ['dateOfBirth', 'dob', 'birthDate'] as const;
const PROTECTED = [...NAMES, 'email', 'phone', 'cardNumber', 'ssn', 'iban', ...BIRTH_DATES] as const;

describe('a realistic customer table through the default manifests', () => {
  it('has the short values issue 12 is about', () => {
    const short = (s: string) => s.replace(/[^A-Za-z]/g, '').length <= 4;
    assert.ok(TABLE.filter((c) => short(c.name)).length > 200, 'short names');
    assert.ok(TABLE.filter((c) => c.email.split('@')[0]!.replace(/[^A-Za-z0-9]/g, '').length <= 4).length > 200, 'short email local parts');
    assert.ok(TABLE.filter((c) => c.phone.replace(/\D/g, '').length < 6).length > 200, 'short phone numbers');
    assert.ok(TABLE.filter((c) => c.cardNumber.length === 4).length > 100, 'card values of 4 digits');
  });

  it('Pseudonymise protects every record, and Reconstruct restores every one exactly (JSON)', () => {
    const pseudo = engine.protectDocument(job('customer', 'Pseudonymise', { thirdPartyId: 12 }), structuredClone(TABLE));
    assert.equal(pseudo.summary.failed, 0);
    const out = pseudo.dataSet as Customer[];
    let unchanged = 0;
    let noSymbol = 0;
    for (let i = 0; i < TABLE.length; i++) {
      for (const field of PROTECTED) {
        if (out[i]![field] !== TABLE[i]![field]) continue;
        // A middle initial `É` has no ASCII letter, the symbols FF1 encrypts (docs/techniques.md).
        if (!/[A-Za-z0-9]/.test(TABLE[i]![field])) noSymbol++;
        else unchanged++;
      }
      assert.equal(out[i]!.email.split('@')[1], TABLE[i]!.email.split('@')[1], 'domain kept');
      assert.match(out[i]!.email, /^[^@\s]+@[^@\s]+$/);
      assert.equal(out[i]!.salary, TABLE[i]!.salary, 'no Pseudonymise rule for salary');
    }
    // Only values with nothing to encrypt stay: every short value got a pseudonym.
    assert.equal(unchanged, 0, `${unchanged} protected values left as they were`);
    assert.ok(noSymbol < TABLE.length / 20, `${noSymbol} values without an ASCII letter or digit`);
    const back = engine.protectDocument(job('customer', 'Reconstruct', { thirdPartyId: 12 }), out);
    assert.equal(back.summary.failed, 0);
    assert.deepEqual(back.dataSet, TABLE);
  });

  it('the same through tabular rows (batched, as gRPC FILE rows and CSV take them)', () => {
    const labels = ['id', ...PROTECTED];
    const rows = TABLE.map((c) => labels.map((l) => String(c[l as keyof Customer])));
    const pseudo = engine.protectRows(job('customer', 'Pseudonymise', {}, 'LIST'), labels, rows, 'FILE');
    assert.equal(pseudo.summary.failed, 0);
    const viaJson = engine.protectDocument(job('customer', 'Pseudonymise'), structuredClone(TABLE)).dataSet as Customer[];
    const at = labels.indexOf('email');
    for (let i = 0; i < rows.length; i += 97) assert.equal(pseudo.rows[i]![at], viaJson[i]!.email, 'batched = one by one');
    const back = engine.protectRows(job('customer', 'Reconstruct', {}, 'LIST'), labels, pseudo.rows, 'FILE');
    assert.deepEqual(back.rows, rows);
  });

  it('names and birth dates under every common field name share the keys of `name` and `dateOfBirth`', () => {
    const pseudo = engine.protectDocument(job('customer', 'Pseudonymise', { thirdPartyId: 12 }), structuredClone(TABLE)).dataSet as Customer[];
    for (let i = 0; i < TABLE.length; i += 7) {
      const c = TABLE[i]!;
      const p = pseudo[i]!;
      // keyName: name / keyName: dateOfBirth: equal values get equal pseudonyms whatever the field.
      for (const field of ['firstName', 'givenName'] as const) assert.equal(p[field], p.firstName);
      for (const field of ['lastName', 'surname'] as const) assert.equal(p[field], p.lastName);
      if (c.name === c.fullName) assert.equal(p.name, p.fullName);
      const one = engine.protectDocument(job('customer', 'Pseudonymise', { thirdPartyId: 12 }), { name: c.firstName, dateOfBirth: c.dob }).dataSet as Customer;
      assert.equal(p.firstName, one.name);
      assert.equal(p.dob, one.dateOfBirth);
    }
  });

  it('Anonymise leaves no name, birth date or other personal value in clear', () => {
    const out = engine.protectDocument(job('customer', 'Anonymise'), structuredClone(TABLE)).dataSet as Customer[];
    for (let i = 0; i < TABLE.length; i++) {
      const c = TABLE[i]!;
      const a = out[i]!;
      for (const field of NAMES) assert.equal(a[field], 'REDACTED', `${field} redacted`);
      for (const field of BIRTH_DATES) assert.equal(String(a[field]), /^\d{4}/.test(c[field]) ? c[field].slice(0, 4) : c[field].slice(-4), `${field}: year only`);
      for (const field of PROTECTED) assert.notEqual(a[field], c[field], `${field} not in clear`);
      const text = JSON.stringify(a);
      for (const field of PROTECTED) if (c[field].length >= 6) assert.ok(!text.includes(c[field]), `${field} appears nowhere in the record`);
    }
  });

  it('Mask hides at least half of every name, under every field name; birth dates are Keep', () => {
    const out = engine.protectDocument(job('customer', 'Mask'), structuredClone(TABLE)).dataSet as Customer[];
    for (let i = 0; i < TABLE.length; i++) {
      const c = TABLE[i]!;
      const m = out[i]!;
      for (const field of NAMES) {
        const before = [...c[field]];
        const after = [...m[field]];
        assert.equal(after.length, before.length, `${field}: length kept`);
        assert.ok(after.every((ch, k) => ch === '*' || ch === before[k]), `${field}: only stars replace characters`);
        const letters = before.filter((ch) => /\p{L}/u.test(ch)).length;
        assert.ok(after.filter((ch) => ch === '*').length * 2 >= letters, `${field} ${c[field]} -> ${m[field]}: at least half hidden`);
        if (letters >= 2) assert.equal(after[0], before[0], `${field}: initial kept`);
      }
      for (const field of BIRTH_DATES) assert.equal(m[field], c[field], `${field} is Keep under Mask`);
    }
  });

  it('Encrypt turns every personal field into a token, and Decrypt restores the table exactly', () => {
    const enc = engine.protectDocument(job('customer', 'Encrypt'), structuredClone(TABLE));
    assert.equal(enc.summary.failed, 0);
    const out = enc.dataSet as Customer[];
    for (let i = 0; i < TABLE.length; i++) for (const field of PROTECTED) assert.match(String(out[i]![field]), /^enc:v1:/, `${field} encrypted`);
    const back = engine.protectDocument(job('customer', 'Decrypt'), out);
    assert.equal(back.summary.failed, 0);
    assert.deepEqual(back.dataSet, TABLE);
  });
});
