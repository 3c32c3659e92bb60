// What each detector accepts and refuses (the table of docs/detection.md), and how the scanner
// places spans in text: boundaries, separators, overlapping kinds.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ContentScanner } from '../../src/detect/scanner.ts';
import { digitRunSteps } from '../../src/detect/digit-runs.ts';
import { DETECT_KINDS, parseDetectKind, type DetectKind } from '../../src/detect/kinds.ts';
import { findTokens } from '../../src/detect/tokens.ts';
import { isCardDigits, luhnValid } from '../../src/detect/card.ts';
import { isIbanCompact } from '../../src/detect/iban.ts';
import { isSsnDigits } from '../../src/detect/ssn.ts';

const scanner = new ContentScanner(DETECT_KINDS);
const found = (text: string) => scanner.scan(text).map((s) => [text.slice(s.start, s.end), s.kind]);

const ACCEPTED: [DetectKind, string][] = [
  ['card', '4111111111111111'],
  ['card', '4111 1111 1111 1111'],
  ['card', '5500-0000-0000-0004'],
  ['card', '2223 0000 4841 0010'],
  ['card', '378282246310005'],
  ['card', '3782 822463 10005'],
  ['card', '6011111111111117'],
  ['card', '3530111333300000'],
  ['card', '30569309025904'],
  ['card', '6200000000000005'],
  ['card', '1354 10014 004955'],
  ['card', '135410014004955'],
  ['card', '5019 7170 1010 3742'],
  ['email', 'jane.doe@example.com'],
  ['email', 'j.o-e_x+tag%1@sub.example.co.uk'],
  ['email', 'user@xn--bcher-kva.example'],
  ['phone', '+44 20 7946 0958'],
  ['phone', '+1 (415) 555-0132'],
  ['phone', '+14155550132'],
  ['phone', '+33 1 23 45 67 89'],
  ['phone', '0044 20 7946 0958'],
  ['phone', '(415) 555-0132'],
  ['phone', '415-555-0132'],
  ['phone', '415.555.0132'],
  ['phone', '415 555 0132'],
  ['phone', '1-415-555-0132'],
  ['phone', '020 7946 0958'],
  ['phone', '01 23 45 67 89'],
  ['phone', '4155550132'],
  ['phone', '14155550132'],
  ['iban', 'DE89370400440532013000'],
  ['iban', 'DE89 3704 0044 0532 0130 00'],
  ['iban', 'GB29NWBK60161331926819'],
  ['iban', 'FR1420041010050500013M02606'],
  ['iban', 'NO9386011117947'],
  ['ssn', '123-45-6789'],
  ['ssn', '123 45 6789'],
  ['ssn', '899-99-9999'],
  ['ipAddress', '192.0.2.10'],
  ['ipAddress', '0.0.0.0'],
  ['ipAddress', '255.255.255.255'],
  ['ipAddress', '2001:db8::1'],
  ['ipAddress', 'fe80::1:2:3:4'],
  ['ipAddress', '2001:0db8:85a3:0000:0000:8a2e:0370:7334'],
  ['ipAddress', '::ffff:192.0.2.1'],
];

const REFUSED: [string, string][] = [
  ['4111111111111112', 'Luhn fails'],
  ['1234567812345670', 'Luhn passes, no issuer prefix'],
  ['41111111111111113', 'Visa prefix, Luhn passes, 17 digits: no Visa length'],
  ['4222222222222', '13-digit Visa: no longer issued, read as an EAN-13'],
  ['4006381333931', 'an EAN-13 barcode'],
  ['9400 4812 5884 4071 4339 37', 'a USPS tracking number written in fours'],
  ['TR06 3807 3604 5040 9080 0504 30', 'the digits of an invalid IBAN'],
  ['4111-1111 1111-1111', 'mixed separators'],
  ['4111 11111111 1111', 'not grouped in fours'],
  ['ID4111111111111111', 'glued to a word'],
  ['4111111111111111abc', 'glued to a word'],
  ['3.4111111111111111', 'decimal fraction'],
  ['jane@localhost', 'one-label domain'],
  ['jane..doe@example.com', 'doubled dot'],
  ['jane@example.c', 'one-letter top-level label'],
  ['jane@-example.com', 'label starting with a hyphen'],
  ['jane@example.c0m', 'digit in the top-level label'],
  ['#4155550132', 'ten bare digits after `#`: an id'],
  ['ISBN 2070612880', 'ten bare digits after ISBN'],
  ['/items/4155550132', 'ten bare digits in a path'],
  ['1234567890', 'ten bare digits, not NANP (area code 1xx)'],
  ['555-0132', 'seven digits'],
  ['123-456-7890', 'NANP area code starting with 1'],
  ['415-155-0132', 'NANP exchange starting with 1'],
  ['911-555-0132', 'N11 area code'],
  ['415-555.0132', 'mixed separators'],
  ['+0 123 456 789', 'no country code 0'],
  ['+1 234', 'too few digits'],
  ['DE88370400440532013000', 'mod-97 fails'],
  ['DE8937040044053201300', 'one character short for DE'],
  ['XX89370400440532013000', 'no such country'],
  ['DE8937040044053201300A', 'letter where DE has digits'],
  ['DE89 370400440532013000', 'print form not in fours'],
  ['de89370400440532013000', 'lower case'],
  ['000-12-3456', 'SSN area 000'],
  ['666-12-3456', 'SSN area 666'],
  ['900-12-3456', 'SSN area 9xx'],
  ['123-00-4567', 'SSN group 00'],
  ['123-45-0000', 'SSN serial 0000'],
  ['078-05-1120', 'advertised SSN'],
  ['123456789', 'bare nine digits'],
  ['256.1.1.1', 'octet over 255'],
  ['1.2.3.4.5', 'version number'],
  ['01.2.3.4', 'leading zero'],
  ['12:30:45', 'a time'],
  ['00:1a:2b:3c:4d:5e', 'a MAC address'],
  ['std::vector', 'C++'],
  ['2024-01-15', 'a date'],
  ['978-0-306-40615-7', 'an ISBN'],
];

describe('detectors', () => {
  for (const [kind, value] of ACCEPTED) {
    it(`${kind}: accepts ${value}`, () => {
      assert.equal(scanner.wholeKind(value), kind);
      assert.deepEqual(found(`see ${value}, thanks`), [[value, kind]], 'found inside text too');
    });
  }
  for (const [value, why] of REFUSED) {
    it(`refuses ${value} (${why})`, () => {
      assert.deepEqual(found(value), []);
    });
  }

  it('the refused card-like numbers really pass Luhn where the table says so', () => {
    for (const n of ['1234567812345670', '41111111111111113']) assert.ok(luhnValid(n), n);
  });

  it('validators', () => {
    assert.ok(luhnValid('79927398713') && !luhnValid('79927398710'));
    assert.ok(isCardDigits('4111111111111111') && !isCardDigits('7111111111111111'));
    assert.ok(isIbanCompact('GB82WEST12345698765432') && !isIbanCompact('GB00WEST12345698765432'));
    assert.ok(isSsnDigits('123456789') && !isSsnDigits('666123456'));
    assert.equal(parseDetectKind('IPADDRESS'), 'ipAddress');
    assert.equal(parseDetectKind('passport'), undefined);
  });
});

describe('scanner', () => {
  it('finds the issue example in free text and keeps the words', () => {
    assert.deepEqual(found('card 4111 1111 1111 1111, call 415-555-0132'), [
      ['4111 1111 1111 1111', 'card'],
      ['415-555-0132', 'phone'],
    ]);
  });

  it('splits runs of digit groups into values: a card, then a phone', () => {
    assert.deepEqual(found('4111 1111 1111 1111 415 555 0132'), [
      ['4111 1111 1111 1111', 'card'],
      ['415 555 0132', 'phone'],
    ]);
    assert.deepEqual(found('call 415 555 0132 5pm'), [['415 555 0132', 'phone']]);
    assert.deepEqual(found('ip 10.0.0.1 415-555-0132'), [
      ['10.0.0.1', 'ipAddress'],
      ['415-555-0132', 'phone'],
    ]);
  });

  it('brackets: a phone area code keeps them, a value in brackets does not', () => {
    assert.deepEqual(found('(415) 555-0132'), [['(415) 555-0132', 'phone']]);
    assert.deepEqual(found('(4111111111111111)'), [['4111111111111111', 'card']]);
    assert.deepEqual(found('(4111 1111 1111 1111 ok'), [['4111 1111 1111 1111', 'card']]);
  });

  it('an email around digits or an IPv6 address around a number wins', () => {
    assert.deepEqual(found('4155550132@sms.example.com'), [['4155550132@sms.example.com', 'email']]);
    assert.deepEqual(found('mail (jane@example.co.uk).'), [['jane@example.co.uk', 'email']]);
    assert.deepEqual(found('host 2001:db8::8a2e:370:7334 up'), [['2001:db8::8a2e:370:7334', 'ipAddress']]);
  });

  it('a value right after a colon and a key ending in a hex letter or digit (issue 17)', () => {
    // The key and the colon looked like the start of an IPv6 address; the failed candidate must not
    // swallow the value after it.
    assert.deepEqual(found('Card:4111111111111111'), [['4111111111111111', 'card']]);
    assert.deepEqual(found('Phone:415-555-0132'), [['415-555-0132', 'phone']]);
    assert.deepEqual(found('Code:123-45-6789'), [['123-45-6789', 'ssn']]);
    assert.deepEqual(found('Node:10.0.0.1'), [['10.0.0.1', 'ipAddress']]);
    assert.deepEqual(found('case:DE89370400440532013000'), [['DE89370400440532013000', 'iban']]);
    assert.deepEqual(found('Node:fe80::1 and id:2001:db8::1'), [['fe80::1', 'ipAddress'], ['2001:db8::1', 'ipAddress']]);
    assert.deepEqual(found('Time:12:30:45 at:4111 1111 1111 1111'), [['4111 1111 1111 1111', 'card']]);
    // Hostile: many colons, each stretch checked once.
    assert.deepEqual(found('a1:'.repeat(20_000) + '4111111111111111'), [['4111111111111111', 'card']]);
    assert.deepEqual(found('a1:'.repeat(20_000) + ' 4111111111111111'), [['4111111111111111', 'card']]);
  });

  it('a CIDR prefix length and an IPv6 zone id are part of the address', () => {
    assert.deepEqual(found('net 192.168.1.0/24.'), [['192.168.1.0/24', 'ipAddress']]);
    assert.deepEqual(found('2001:db8::/32, fe80::1%eth0 and [fe80::1%25en0]'), [
      ['2001:db8::/32', 'ipAddress'],
      ['fe80::1%eth0', 'ipAddress'],
      ['fe80::1%25en0', 'ipAddress'],
    ]);
    // Not a prefix length: too large, more path after it, glued to a word.
    assert.deepEqual(found('10.0.0.1/33 10.0.0.2/24/5 10.0.0.3/24x'), [['10.0.0.1', 'ipAddress'], ['10.0.0.2', 'ipAddress'], ['10.0.0.3', 'ipAddress']]);
  });

  it('looks only for its own kinds; text with nothing in it costs nothing', () => {
    const cards = new ContentScanner(['card']);
    assert.deepEqual(cards.scan('call 415-555-0132 or mail jane@example.com, 4111111111111111').length, 1);
    assert.equal(scanner.scan('Lorem ipsum dolor sit amet').length, 0);
    assert.equal(scanner.scan('').length, 0);
    assert.equal(scanner.wholeKind('x 4111111111111111'), undefined);
  });

  it('finds enc:v1 tokens in text, trailing punctuation excluded, glued to a word too', () => {
    // A value can start right after a digit or letter (`0(415) 555-0132`): so can its token.
    const text = 'a enc:v1:gcm:default:2:AbC-_x9. and xenc:v1:gcm:k:1:zz and enc:v1:siv:k.1:3:QQ';
    assert.deepEqual(
      findTokens(text).map(([s, e]) => text.slice(s, e)),
      ['enc:v1:gcm:default:2:AbC-_x9', 'enc:v1:gcm:k:1:zz', 'enc:v1:siv:k.1:3:QQ'],
    );
  });

  it('stays linear on long adversarial runs', () => {
    const long = '1 '.repeat(100_000) + '@'.repeat(1000) + ':'.repeat(1000) + '1-'.repeat(50_000);
    // Counted, not timed: the digit-run reader's steps stay a few per character (the `@` and `:`
    // checks look at most a bounded distance around each, by construction).
    digitRunSteps.count = 0;
    scanner.scan(long);
    assert.ok(digitRunSteps.count <= 3 * long.length, `${digitRunSteps.count} steps for ${long.length} characters`);
  });
});
