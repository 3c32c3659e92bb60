// The body decoder of routed requests (issue 16, class 1): whatever it accepts, every reader that
// honours one of the body's signals — its byte order mark, its charset, its XML declaration —
// reads the same characters; everything else is refused with 415.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { readBodyText } from '../../src/proxy/reading/body-charset.ts';
import { RefusedInputError } from '../../src/proxy/reading/body-kind.ts';

type Bytes = 'utf-8' | 'utf-16le' | 'utf-16be' | 'latin1';

function encode(text: string, as: Bytes): Buffer {
  if (as === 'utf-8') return Buffer.from(text, 'utf8');
  if (as === 'latin1') return Buffer.from(text, 'latin1');
  const le = Buffer.from(text, 'utf16le');
  return as === 'utf-16le' ? le : le.swap16();
}

const BOMS: Record<string, number[]> = { none: [], 'utf-8': [0xef, 0xbb, 0xbf], 'utf-16le': [0xff, 0xfe], 'utf-16be': [0xfe, 0xff], 'utf-32le': [0xff, 0xfe, 0, 0] };

/** What a WHATWG decoder reads with `label` (BOM sniffing as TextDecoder does); undefined when it knows no such label. */
function readWith(label: string, body: Buffer): string | undefined {
  try {
    return new TextDecoder(label).decode(body);
  } catch {
    return undefined;
  }
}

test('property: an accepted body reads the same under every signal it carries; others are refused (415)', () => {
  const text = fc.constantFrom('Jane Doe', 'Jäne Døe', 'ジェーン', 'plain ascii 4111');
  fc.assert(
    fc.property(
      text,
      fc.constantFrom<Bytes>('utf-8', 'utf-16le', 'utf-16be', 'latin1'),
      fc.constantFrom(...Object.keys(BOMS)),
      fc.constantFrom(undefined, 'utf-8', 'UTF8', 'us-ascii', 'utf-16', 'utf-16le', 'utf-16be', 'iso-8859-1', 'utf-7', 'windows-1252', 'shift_jis'),
      fc.constantFrom(undefined, 'UTF-8', 'UTF-16', 'utf-16le', 'ISO-8859-1', 'UTF-7', 'US-ASCII', 'EBCDIC-US'),
      fc.constantFrom('XML', 'JSON') as fc.Arbitrary<'XML' | 'JSON'>,
      (value, as, bom, charset, declared, kind) => {
        const doc = kind === 'XML' ? `${declared === undefined ? '' : `<?xml version="1.0" encoding="${declared}"?>`}<r><name>${value}</name></r>` : JSON.stringify({ name: value });
        const body = Buffer.concat([Buffer.from(BOMS[bom]!), encode(doc, as)]);
        const contentType = `application/${kind.toLowerCase()}${charset === undefined ? '' : `; charset=${charset}`}`;
        let read: string | undefined;
        try {
          read = readBodyText(body, kind, contentType).text;
        } catch (err) {
          assert.ok(err instanceof RefusedInputError, String(err));
          assert.ok(err.code === 'UNSUPPORTED_DATA_SET_TYPE' || err.code === 'MALFORMED_DATA_SET');
          assert.ok(!err.message.includes(value));
          return;
        }
        // Every signal present (a declaration only where the bytes as read show one) names an encoding under which the body reads as the gateway read it.
        const signals = [bom === 'none' ? undefined : bom, charset, kind === 'XML' && read.includes('encoding=') ? declared : undefined].filter((s): s is string => s !== undefined);
        if (signals.length === 0) signals.push('utf-8');
        for (const signal of signals) {
          // `utf-16` leaves the byte order to the mark (RFC 2781), as Python's codec does; US-ASCII is checked below.
          const label = /^us-ascii$/i.test(signal) ? 'utf-8' : /^utf-16$/i.test(signal) && bom.startsWith('utf-16') ? bom : signal;
          const theirs = readWith(label, body);
          assert.equal(theirs, read, `${signal} reads another text (${bom}, ${as}, ${String(charset)}, ${String(declared)})`);
        }
        if (signals.some((s) => /ascii/i.test(s))) assert.ok(!body.some((b) => b >= 0x80));
        // (A mark over bytes of another encoding reads as other characters to everyone alike; the codec then refuses them.)
        if (bom === 'none' || bom === as || (bom === 'utf-8' && as === 'utf-8')) assert.ok(read.includes(value));
      },
    ),
    { numRuns: 2000 },
  );
});

test('UTF-16 bodies are written back with their own mark and byte order', () => {
  for (const [mark, as] of [[[0xff, 0xfe], 'utf-16le'], [[0xfe, 0xff], 'utf-16be']] as const) {
    const body = Buffer.concat([Buffer.from(mark), encode('{"name":"Jäne"}', as)]);
    const decoded = readBodyText(body, 'JSON', 'application/json');
    assert.equal(decoded.text, '{"name":"Jäne"}');
    assert.deepEqual(decoded.encode(decoded.text), body);
  }
  const utf8 = readBodyText(Buffer.from('{"a":"ü"}'), 'JSON', undefined);
  assert.deepEqual(utf8.encode('{"a":"ü"}'), Buffer.from('{"a":"ü"}'));
});
