// Values hidden by an encoding (issue 17, item 4): fullwidth digits, zero-width characters,
// percent-encoding, JSON \u escapes and XML character references are read decoded, the span covers
// the original characters, and the protected value is written back in the same encoding.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ContentScanner } from '../../src/detect/scanner.ts';
import { DETECT_KINDS } from '../../src/detect/kinds.ts';
import { decodedView, valueEncoding } from '../../src/detect/decode.ts';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testEngine, job, DEFAULT_MANIFESTS } from '../helpers/engine.ts';
import type { JobType } from '../../src/core/types.ts';
import fc from 'fast-check';
import { valueArb } from '../helpers/detected-values.ts';

const scanner = new ContentScanner(DETECT_KINDS);
const found = (text: string) => scanner.scan(text).map((s) => [text.slice(s.start, s.end), s.kind]);

describe('detection through encodings', () => {
  it('finds values written in fullwidth forms, with zero-width characters, percent-encoded, escaped or as character references', () => {
    assert.deepEqual(found('card ４１１１ １１１１ １１１１ １１１１ ok'), [['４１１１ １１１１ １１１１ １１１１', 'card']]);
    assert.deepEqual(found('call ４１５－５５５－０１３２.'), [['４１５－５５５－０１３２', 'phone']]);
    assert.deepEqual(found('card 4111\u200b1111\u200b1111\u200b1111 ok'), [['4111\u200b1111\u200b1111\u200b1111', 'card']]);
    assert.deepEqual(found('<a href="mailto:jane%40example.com?subject=hi">'), [['jane%40example.com', 'email']]);
    assert.deepEqual(found('email=jane%40example.com&phone=%2B14155550132'), [
      ['jane%40example.com', 'email'],
      ['%2B14155550132', 'phone'],
    ]);
    assert.deepEqual(found('next=%2Fu%3Fe%3Djane%2540example.com'), [['jane%2540example.com', 'email']], 'encoded twice');
    assert.deepEqual(found('card=4111+1111+1111+1111&x=1+2'), [['4111+1111+1111+1111', 'card']], "a form's + for a space");
    assert.deepEqual(found('{\\"email\\":\\"jane\\u0040example.com\\"}'), [['jane\\u0040example.com', 'email']]);
    assert.deepEqual(found('<e>jane&#64;example.com</e> <c>&#x34;111111111111111</c>'), [
      ['jane&#64;example.com', 'email'],
      ['&#x34;111111111111111', 'card'],
    ]);
  });

  it('leaves what is no encoding as written: LIKE patterns, percentages', () => {
    assert.deepEqual(found("notes LIKE '%4111 1111 1111 1111%'"), [['4111 1111 1111 1111', 'card']]);
    assert.equal(decodedView('50%ABC off, 100%41 sure'), undefined);
    assert.equal(decodedView('plain text 4111 1111 1111 1111'), undefined, 'no encoding: no decoded copy');
  });

  it('writes a result of the same length back in the encoding, character by character', () => {
    for (const value of ['４１１１ １１１１', 'jane%40example.com', 'jane%2540example.com', '4111\u200b1111', 'jane\\u0040example.com', '&#x34;111', 'jane&#64;x.io']) {
      const e = valueEncoding(value)!;
      assert.ok(!/[%\\&\u200b\uff10-\uff19]/.test(e.plain), `${value} decoded: ${e.plain}`);
      assert.equal(e.encode(e.plain), value, 'identity');
    }
    assert.equal(valueEncoding('４１１１ １１１１')!.encode('**** 1111'), '＊＊＊＊ １１１１');
    assert.equal(valueEncoding('jane%40example.com')!.encode('j***@example.com'), 'j***%40example.com');
    assert.equal(valueEncoding('4111\u200b1111')!.encode('****1111'), '****\u200b1111');
    // Another length: the punctuation the original encoded is encoded wherever it occurs; letters,
    // digits and `:` stay plain (an enc:v1: token stays findable).
    assert.equal(valueEncoding('jane%40example.com')!.encode('x@y.example.com'), 'x%40y.example.com');
    assert.equal(valueEncoding('tel%3A%2B14155550132')!.encode('enc:v1:gcm:k:1:Ab+'), 'enc:v1:gcm:k:1:Ab%2B');
    assert.equal(valueEncoding('４１１１')!.encode('enc:v1:gcm:k:1:Ab'), 'enc:v1:gcm:k:1:Ab');
  });
});

describe('protection in place in the original encoding (engine)', () => {
  const engine = testEngine();
  const doc = (jobType: JobType, data: unknown) => engine.protectDocument(job('customer', jobType, {}, 'JSON'), structuredClone(data)).dataSet as { notes: string };
  const TEXTS = [
    'card ４１１１ １１１１ １１１１ １１１１ ok',
    'card 4111\u200b1111\u200b1111\u200b1111 ok',
    'see https://example.com/u?email=jane%40example.com&tel=%2B14155550132',
    'next=%2Fu%3Fe%3Djane%2540example.com',
    '{\\"email\\":\\"jane\\u0040example.com\\"}',
    '<e>jane&#64;example.com</e>',
    'email=jane%40example.com&card=4111+1111+1111+1111',
  ];

  it('Mask hides the value and keeps the encoding', () => {
    assert.equal(doc('Mask', { notes: TEXTS[0] }).notes, 'card ＊＊＊＊ ＊＊＊＊ ＊＊＊＊ １１１１ ok');
    const masked = doc('Mask', { notes: TEXTS[2] }).notes;
    assert.ok(!masked.includes('jane') && !masked.includes('4155550132') && masked.includes('%40example.com'), masked);
  });

  it('Pseudonymise -> Reconstruct and Encrypt -> Decrypt give every text back exactly', () => {
    for (const [forward, reverse] of [['Pseudonymise', 'Reconstruct'], ['Encrypt', 'Decrypt']] as const) {
      for (const text of TEXTS) {
        const out = doc(forward, { notes: text });
        assert.notEqual(out.notes, text, `${forward} changed ${text}`);
        assert.equal(doc(reverse, out).notes, text, `${forward} -> ${reverse}: ${text} via ${out.notes}`);
      }
    }
  });
});

describe('Pseudonymise -> Reconstruct of values with encoded characters, whatever the pseudonym\'s length (issue 17)', () => {
  const engine = testEngine();
  const notes = (jobType: JobType, text: string) => (engine.protectDocument(job('customer', jobType), { notes: text }).dataSet as { notes: string }).notes;

  /** One character of the value written encoded: fullwidth, a hex or decimal reference, a JSON escape, or a zero-width character before it. */
  const encodeOne = (value: string, at: number, how: number): string => {
    const c = value.charCodeAt(at);
    if (c > 127) return value;
    const forms = [
      c > 32 && c < 127 ? String.fromCharCode(c + 0xfee0) : value[at],
      `&#x${c.toString(16)};`,
      `&#${c};`,
      `\\u00${c.toString(16).padStart(2, '0')}`,
      `\u200b${value[at]}`,
    ];
    return value.slice(0, at) + forms[how % forms.length] + value.slice(at + 1);
  };

  it('the fuzz findings come back in their own spelling (the pseudonym carries the encoded characters)', () => {
    for (const text of ['４a0@example.com 0000', '-４1.0.0.0', ':&#x34;1.0.0.0', '-&#x34;1.0.0.0 001-01-0001']) {
      const p = notes('Pseudonymise', text);
      assert.notEqual(p, text);
      assert.equal(notes('Reconstruct', p), text, `${text} via ${p}`);
    }
    assert.equal(notes('Pseudonymise', '-４1.0.0.0'), '-１26.110.152.69');
  });

  it('random values of every kind with one or two characters encoded (500 texts): exact, or refused — never another spelling', () => {
    let exact = 0;
    fc.assert(
      fc.property(valueArb, fc.nat(), fc.nat(), fc.nat(4), fc.boolean(), (value, a, b, how, two) => {
        let text = encodeOne(value, a % value.length, how);
        if (two) text = encodeOne(text, b % text.length, how + 1);
        text = `x ${text} y`;
        let p: string;
        try {
          p = notes('Pseudonymise', text);
        } catch {
          return;
        }
        assert.equal(notes('Reconstruct', p), text, `${JSON.stringify(text)} via ${JSON.stringify(p)}`);
        exact++;
      }),
      { numRuns: 500, seed: 1717 },
    );
    assert.ok(exact > 450, `${exact} of 500 round trips`);
  });
});

describe('base64 text, where the manifest says so (detect.base64)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-b64-'));
  const customer = readFileSync(join(DEFAULT_MANIFESTS, 'customer.yaml'), 'utf8');
  assert.ok(customer.includes('  kinds: [card, email, phone, iban, ssn, ipAddress]\n'));
  writeFileSync(join(dir, 'customer.yaml'), customer.replace('  kinds: [card, email, phone, iban, ssn, ipAddress]\n', '  kinds: [card, email, phone, iban, ssn, ipAddress]\n  base64: true\n'));
  const withB64 = testEngine(dir);
  const plain = testEngine();
  const doc = (engine: ReturnType<typeof testEngine>, jobType: JobType, data: unknown) => engine.protectDocument(job('customer', jobType, {}, 'JSON'), structuredClone(data)).dataSet as any;
  const b64 = (s: string, url = false) => Buffer.from(s).toString(url ? 'base64url' : 'base64');
  const message = { message: { data: b64(JSON.stringify({ email: 'jane@example.com', card: '4111 1111 1111 1111', note: 'hi' })), attributes: { trace: b64('call 415-555-0132', true) } } };

  it('protects inside base64 text and writes it back encoded; only where the manifest says so', () => {
    const masked = doc(withB64, 'Mask', message);
    const inner = Buffer.from(masked.message.data, 'base64').toString();
    assert.deepEqual(JSON.parse(inner), { email: 'j***@example.com', card: '**** **** **** 1111', note: 'hi' });
    assert.equal(Buffer.from(masked.message.attributes.trace, 'base64url').toString(), 'call ***-***-0132');
    assert.deepEqual(doc(plain, 'Mask', message), message, 'off by default: base64 is left as it is');
    assert.deepEqual(doc(withB64, 'Mask', { id: 'dXNlcm5hbWUx', other: 'abcdefghijklmnop' }), { id: 'dXNlcm5hbWUx', other: 'abcdefghijklmnop' }, 'base64 of text without values, and ids, unchanged');
  });

  it('Pseudonymise -> Reconstruct and Encrypt -> Decrypt are exact', () => {
    for (const [forward, reverse] of [['Pseudonymise', 'Reconstruct'], ['Encrypt', 'Decrypt']] as const) {
      const out = doc(withB64, forward, message);
      assert.notEqual(out.message.data, message.message.data);
      assert.ok(!Buffer.from(out.message.data, 'base64').toString().includes('jane@example.com'));
      assert.deepEqual(doc(withB64, reverse, out), message, `${forward} -> ${reverse}`);
    }
  });
});
