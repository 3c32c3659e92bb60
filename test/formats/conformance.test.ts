// One conformance suite every codec runs through the real engine and the default `customer`
// manifest: bytes outside protected values unchanged, exact round trips, Restrict removes exactly
// the field, malformed input → MALFORMED_DATA_SET with a position and nothing echoed.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError } from '../../src/core/errors.ts';
import type { DataSetType, JobType } from '../../src/core/types.ts';
import { testEngine, job } from '../helpers/engine.ts';

const engine = testEngine();

/** Mask results of the default manifest for the sample values (DESIGN §12). */
const MASKED: Record<string, string> = {
  'Jane Doe': 'J*** D**',
  '4111 1111 1111 1111': '**** **** **** 1111',
  '123-45-6789': '***-**-6789',
};

interface CodecCase {
  readonly type: DataSetType;
  /** Tells two cases of one type apart. */
  readonly label?: string;
  readonly sqlDialect?: string;
  /** Holds Jane Doe (name), the card and the ssn, plus untouched data. */
  readonly document: string;
  /** The document with the ssn field removed (Restrict). */
  readonly restricted: string;
  readonly malformed: string;
}

const cases: CodecCase[] = [
  {
    type: 'JSON',
    document: '{"name":"Jane Doe","cardNumber":"4111 1111 1111 1111","ssn":"123-45-6789","note":"keep me","n":42}',
    restricted: '{"name":"Jane Doe","cardNumber":"4111 1111 1111 1111","note":"keep me","n":42}',
    malformed: '{"name":"Jane Doe","cardNumber":"4111 1111 1111 1111",',
  },
  {
    type: 'JSON',
    label: 'as written (big integers, spacing, escapes, duplicate keys)',
    document:
      '{\n  "orderId": 12345678901234567890,\n  "name": "Jane Doe",\n  "cardNumber": "4111 1111 1111 1111",\n  "ssn": "123-45-6789",\n  "note": "caf\\u00e9 \\"keep\\" me",\n  "n": 1.50e+2,\n  "name": "Jane Doe"\n}\n',
    restricted:
      '{\n  "orderId": 12345678901234567890,\n  "name": "Jane Doe",\n  "cardNumber": "4111 1111 1111 1111",\n  "note": "caf\\u00e9 \\"keep\\" me",\n  "n": 1.50e+2,\n  "name": "Jane Doe"\n}\n',
    malformed: '{\n  "name": "Jane Doe",\n  "cardNumber": 4111 1111 1111 1111\n}',
  },
  {
    type: 'XML',
    document:
      '<?xml version="1.0"?>\n<!-- customer -->\n<c:customer xmlns:c="urn:c" id="7">\n  <c:name>Jane Doe</c:name>\n  <c:cardNumber><![CDATA[4111 1111 1111 1111]]></c:cardNumber>\n  <c:ssn>123-45-6789</c:ssn>\n  <c:note a="b">keep &amp; me</c:note>\n</c:customer>\n',
    restricted:
      '<?xml version="1.0"?>\n<!-- customer -->\n<c:customer xmlns:c="urn:c" id="7">\n  <c:name>Jane Doe</c:name>\n  <c:cardNumber><![CDATA[4111 1111 1111 1111]]></c:cardNumber>\n  <c:note a="b">keep &amp; me</c:note>\n</c:customer>\n',
    malformed: '<customer><name>Jane Doe</name><cardNumber>4111 1111 1111 1111</customer>',
  },
  {
    type: 'SQL',
    sqlDialect: 'postgresql',
    document:
      "INSERT INTO customers (name, cardNumber, ssn, note) VALUES ('Jane Doe', '4111 1111 1111 1111', '123-45-6789', 'keep me');\nUPDATE customers SET note = 'x' WHERE cardNumber = '4111 1111 1111 1111';",
    restricted:
      "INSERT INTO customers (name, cardNumber, note) VALUES ('Jane Doe', '4111 1111 1111 1111', 'keep me');\nUPDATE customers SET note = 'x' WHERE cardNumber = '4111 1111 1111 1111';",
    malformed: "INSERT INTO customers (name, cardNumber VALUES ('Jane Doe', '4111 1111 1111 1111'",
  },
  {
    type: 'SQL',
    label: 'MySQL with executable and line comments',
    sqlDialect: 'mysql',
    document:
      "/*!40101 SET NAMES utf8mb4 */;\nINSERT INTO customers (name, cardNumber, ssn, note) VALUES ('Jane Doe', /*!'4111 1111 1111 1111'*/, '123-45-6789', 'keep me') # trailing\n;\nUPDATE customers SET note = \"x\" WHERE cardNumber = '4111 1111 1111 1111'; -- done\n",
    restricted:
      "/*!40101 SET NAMES utf8mb4 */;\nINSERT INTO customers (name, cardNumber, note) VALUES ('Jane Doe', /*!'4111 1111 1111 1111'*/, 'keep me') # trailing\n;\nUPDATE customers SET note = \"x\" WHERE cardNumber = '4111 1111 1111 1111'; -- done\n",
    malformed: "INSERT INTO customers (name) VALUES ('Jane Doe') /*!50001 , ('4111 1111 1111 1111') */;",
  },
  {
    type: 'LIST',
    document: 'name,cardNumber,ssn,note\r\nJane Doe,4111 1111 1111 1111,123-45-6789,keep me\r\n"Jane Doe","4111 1111 1111 1111",123-45-6789,"a, b"\r\n',
    restricted: 'name,cardNumber,note\r\nJane Doe,4111 1111 1111 1111,keep me\r\nJane Doe,4111 1111 1111 1111,"a, b"\r\n',
    malformed: 'name,cardNumber\r\n"Jane Doe,4111 1111 1111 1111\r\n',
  },
];

function run(c: CodecCase, jobType: JobType, text: string): string {
  const spec = job('customer', jobType, c.sqlDialect ? { sqlDialect: c.sqlDialect } : {}, c.type);
  return engine.protectDocument(spec, text).dataSet as string;
}

for (const c of cases) {
  describe(`codec conformance: ${c.type}${c.label ? ` ${c.label}` : ''}`, () => {
    it('Mask changes only the protected values; every other byte is unchanged', () => {
      let expected = c.document;
      for (const [clear, masked] of Object.entries(MASKED)) expected = expected.split(clear).join(masked);
      if (c.type === 'LIST') expected = expected.replace('"J*** D**","**** **** **** 1111"', 'J*** D**,**** **** **** 1111');
      assert.equal(run(c, 'Mask', c.document), expected);
    });

    for (const [forward, reverse] of [
      ['Pseudonymise', 'Reconstruct'],
      ['Encrypt', 'Decrypt'],
    ] as const) {
      it(`${forward} → ${reverse} gives back the exact original`, () => {
        const protectedText = run(c, forward, c.document);
        assert.ok(!protectedText.includes('Jane Doe'), 'name protected');
        assert.ok(!protectedText.includes('4111 1111 1111 1111'), 'card protected');
        const back = run(c, reverse, protectedText);
        const canonical = c.type === 'LIST' ? c.document.replace('"Jane Doe","4111 1111 1111 1111"', 'Jane Doe,4111 1111 1111 1111') : c.document;
        assert.equal(back, canonical);
      });
    }

    it('Restrict removes exactly the restricted field', () => {
      assert.equal(run(c, 'Restrict', c.document), c.restricted);
    });

    it('malformed input → MALFORMED_DATA_SET with a position, nothing echoed', () => {
      assert.throws(
        () => run(c, 'Mask', c.malformed),
        (err: unknown) => {
          assert.ok(err instanceof DpgError, String(err));
          assert.equal(err.code, 'MALFORMED_DATA_SET');
          assert.match(err.message, /line \d+|position \d+|offset \d+/);
          for (const secret of ['Jane', '4111']) assert.ok(!err.message.includes(secret), err.message);
          return true;
        },
      );
    });
  });
}
