// XML codec: bytes outside protected values unchanged, round trips, Restrict, escaping, paths.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldAction, FieldResolver } from '../../../src/formats/codec.ts';
import type { Scalar } from '../../../src/core/types.ts';
import { createXmlCodec, xmlCodec } from '../../../src/formats/xml/index.ts';

// Fake actions: reversible (reverse the string), irreversible (mask), removing (restrict).
const reverse = (value: string): string => [...value].reverse().join('');

interface Recorded {
  value: Scalar;
  location: string;
}

function action(kind: 'reverse' | 'mask' | 'restrict' | 'constant', seen: Recorded[] = [], constant: Scalar = ''): FieldAction {
  return {
    removes: () => kind === 'restrict',
    apply(value: Scalar, location: string | (() => string)): Scalar {
      seen.push({ value, location: typeof location === 'function' ? location() : location });
      if (kind === 'constant') return constant;
      const text = String(value);
      return kind === 'reverse' ? reverse(text) : text.replace(/[0-9]/g, '*');
    },
    applyBatch(values: Scalar[], location: (index: number) => string): Scalar[] {
      return values.map((v, i) => this.apply(v, () => location(i)));
    },
  };
}

function resolverOf(byName: Record<string, FieldAction>, usesPaths = false): FieldResolver & { calls: number } {
  const resolver = {
    usesPaths,
    calls: 0,
    resolve(name: string, path?: string): FieldAction | undefined {
      resolver.calls++;
      return byName[path ?? name] ?? byName[name];
    },
  };
  return resolver;
}

const protect = (xml: string, resolver: FieldResolver): string => xmlCodec.protect(xml, resolver, {}) as string;

const SOAP = `<?xml version="1.0" encoding="UTF-8"?>
<!-- outbound payment, do not edit -->
<?audit level="full"?>
<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"
               xmlns:pay="urn:example:payments" >
  <soap:Header>
    <pay:trace   id = 'T-77' />
  </soap:Header>
  <soap:Body>
    <pay:payment id="P-1001" currency='EUR'>
      <!-- card holder -->
      <pay:name>Jane &amp; John Doe</pay:name>
      <pay:cardNumber>
        4111 1111 1111 1234
      </pay:cardNumber>
      <pay:note><![CDATA[Call <before> 5pm & after]]></pay:note>
      <pay:ssn>078-05-1120</pay:ssn>
      <amount>12.50</amount>
    </pay:payment>
  </soap:Body>
</soap:Envelope>
`;

describe('xmlCodec: SOAP envelope with two namespaces, attributes, CDATA and comments', () => {
  it('changes only the protected values', () => {
    const resolver = resolverOf({ name: action('reverse'), cardNumber: action('reverse'), note: action('reverse'), id: action('reverse') });
    const expected = SOAP.replace("'T-77'", "'77-T'")
      .replace('"P-1001"', '"1001-P"')
      .replace('Jane &amp; John Doe', 'eoD nhoJ &amp; enaJ')
      .replace('4111 1111 1111 1234', '4321 1111 1111 1114')
      .replace('<![CDATA[Call <before> 5pm & after]]>', '<![CDATA[retfa & mp5 >erofeb< llaC]]>');
    assert.equal(protect(SOAP, resolver), expected);
  });

  it('round-trips through a reversible action to the exact original', () => {
    const resolver = resolverOf({
      name: action('reverse'),
      cardNumber: action('reverse'),
      note: action('reverse'),
      ssn: action('reverse'),
      id: action('reverse'),
      currency: action('reverse'),
      amount: action('reverse'),
    });
    const once = protect(SOAP, resolver);
    assert.notEqual(once, SOAP);
    assert.equal(protect(once, resolver), SOAP);
  });

  it('returns the input unchanged when no field matches, resolving each name once', () => {
    const resolver = resolverOf({});
    assert.equal(protect(SOAP, resolver), SOAP);
    // Distinct local names of elements and non-namespace attributes: Envelope, Header, trace, id,
    // Body, payment, currency, name, cardNumber, note, ssn, amount.
    assert.equal(resolver.calls, 12);
  });

  it('gives techniques decoded values and matches local names without prefixes', () => {
    const seen: Recorded[] = [];
    protect(SOAP, resolverOf({ name: action('mask', seen), cardNumber: action('mask', seen), note: action('mask', seen) }));
    assert.deepEqual(
      seen.map((s) => s.value),
      ['Jane & John Doe', '4111 1111 1111 1234', 'Call <before> 5pm & after'],
    );
  });

  it('never treats namespace declarations as fields', () => {
    const resolver = resolverOf({ soap: action('reverse'), pay: action('reverse'), xmlns: action('reverse') });
    assert.equal(protect(SOAP, resolver), SOAP);
  });
});

describe('xmlCodec: Restrict', () => {
  it('removes a leaf element with its indentation', () => {
    const out = protect(SOAP, resolverOf({ ssn: action('restrict') }));
    assert.equal(out, SOAP.replace('\n      <pay:ssn>078-05-1120</pay:ssn>', ''));
  });

  it('removes an attribute with the whitespace before it', () => {
    const out = protect(SOAP, resolverOf({ currency: action('restrict') }));
    assert.equal(out, SOAP.replace(` currency='EUR'`, ''));
  });

  it('removes the last child and keeps the parent tidy', () => {
    const xml = '<a>\n  <b>1</b>\n  <c>2</c>\n</a>';
    assert.equal(protect(xml, resolverOf({ c: action('restrict') })), '<a>\n  <b>1</b>\n</a>');
    assert.equal(protect(xml, resolverOf({ b: action('restrict'), c: action('restrict') })), '<a>\n</a>');
  });

  it('removes only the element in mixed content', () => {
    const xml = '<p>Dear <name>Jane</name>, hello</p>';
    assert.equal(protect(xml, resolverOf({ name: action('restrict') })), '<p>Dear , hello</p>');
  });

  it('takes a removed element’s attributes with it without running their techniques', () => {
    const seen: Recorded[] = [];
    const out = protect('<r><ssn kind="x">1</ssn></r>', resolverOf({ ssn: action('restrict'), kind: action('mask', seen) }));
    assert.equal(out, '<r></r>');
    assert.equal(seen.length, 0);
  });

  it('removes self-closing elements and a restricted root', () => {
    assert.equal(protect('<r>\n\t<ssn/>\n</r>', resolverOf({ ssn: action('restrict') })), '<r>\n</r>');
    assert.equal(protect('<?xml version="1.0"?>\n<ssn>1</ssn>\n', resolverOf({ ssn: action('restrict') })), '<?xml version="1.0"?>\n');
  });
});

describe('xmlCodec: values and escaping', () => {
  it('decodes references before protection and escapes the result', () => {
    const out = protect(`<r a="&quot;x&#39;">&lt;&#x41;&gt;</r>`, resolverOf({ r: action('constant', [], `<&>"'`), a: action('constant', [], `<&>"'\n`) }));
    assert.equal(out, `<r a="&lt;&amp;>&quot;'&#10;">&lt;&amp;&gt;"'</r>`);
  });

  it('keeps the quote style of an attribute', () => {
    const out = protect(`<r a='1'/>`, resolverOf({ a: action('constant', [], `it's "x"`) }));
    assert.equal(out, `<r a='it&apos;s "x"'/>`);
  });

  it('falls back from CDATA to escaped text when the value contains ]]>', () => {
    const out = protect('<r><![CDATA[a]]></r>', resolverOf({ r: action('constant', [], 'x]]>y') }));
    assert.equal(out, '<r>x]]&gt;y</r>');
  });

  it('writes non-string results as text and null as empty content', () => {
    assert.equal(protect('<r>5</r>', resolverOf({ r: action('constant', [], 42) })), '<r>42</r>');
    assert.equal(protect('<r>5</r>', resolverOf({ r: action('constant', [], null) })), '<r></r>');
    assert.equal(protect('<r>5</r>', resolverOf({ r: action('constant', [], true) })), '<r>true</r>');
  });

  it('gives empty elements a value when the technique returns one', () => {
    assert.equal(protect('<r><a/><b></b><c> </c></r>', resolverOf({ a: action('constant', [], 'X'), b: action('constant', [], 'Y'), c: action('constant', [], 'Z') })),
      '<r><a>X</a><b>Y</b><c>Z</c></r>');
  });

  it('keeps bytes of values the technique leaves unchanged (entity escapes as written)', () => {
    const xml = '<r><v>&#65;&amp;b</v></r>';
    assert.equal(protect(xml, resolverOf({ v: action('constant', [], 'A&b') })), xml);
  });

  it('normalises line ends and attribute whitespace as an XML parser would', () => {
    const seen: Recorded[] = [];
    protect('<r a="x\ty\r\nz"><v>1\r\n2&#13;</v></r>', resolverOf({ a: action('mask', seen), v: action('mask', seen) }));
    assert.deepEqual(seen.map((s) => s.value), ['x y z', '1\n2\r']);
  });

  it('reads a leaf with comments inside as one value and writes it back around them (comments and PIs stay)', () => {
    const seen: Recorded[] = [];
    const out = protect('<r><v> 12<!-- c -->34<?pi x?> </v></r>', resolverOf({ v: action('mask', seen) }));
    assert.deepEqual(seen.map((s) => s.value), ['1234']);
    // The joined value (what ElementTree reads) goes into the first piece (what minidom reads first).
    assert.equal(out, '<r><v> ****<!-- c --><?pi x?> </v></r>');
  });

  it('protects an element with child elements when its name matches (see xml-nested.test.ts)', () => {
    const xml = '<r><card><number>1</number></card></r>';
    assert.equal(protect(xml, resolverOf({ card: action('restrict') })), '<r></r>');
    assert.equal(protect(xml, resolverOf({ card: action('mask') })), '<r><card><number>*</number></card></r>');
  });
});

describe('xmlCodec: paths and locations', () => {
  it('resolves by local-name paths for elements and attributes when the plan uses paths', () => {
    const resolver = resolverOf(
      { '/Envelope/Body/payment/cardNumber': action('reverse'), '/Envelope/Body/payment/@id': action('reverse') },
      true,
    );
    const out = protect(SOAP, resolver);
    assert.ok(out.includes('4321 1111 1111 1114'));
    assert.ok(out.includes('id="1001-P"'));
    assert.ok(out.includes(`id = 'T-77'`));
  });

  it('reports locations as paths, never values', () => {
    const seen: Recorded[] = [];
    protect(SOAP, resolverOf({ cardNumber: action('mask', seen), id: action('mask', seen) }));
    assert.deepEqual(seen.map((s) => s.location), [
      '/Envelope/Header/trace/@id',
      '/Envelope/Body/payment/@id',
      '/Envelope/Body/payment/cardNumber',
    ]);
    const pathSeen: Recorded[] = [];
    protect(SOAP, resolverOf({ cardNumber: action('mask', pathSeen) }, true));
    assert.deepEqual(pathSeen.map((s) => s.location), ['/Envelope/Body/payment/cardNumber']);
  });
});

describe('xmlCodec: input type and options', () => {
  it('refuses a non-string data set', () => {
    assert.throws(() => xmlCodec.protect({ a: 1 }, resolverOf({}), {}), { code: 'INVALID_REQUEST' });
  });

  it('rejects an invalid maxDepth option', () => {
    assert.throws(() => createXmlCodec({ maxDepth: 0 }), RangeError);
  });

  it('keeps a byte order mark and the text around the root', () => {
    const xml = '\uFEFF<?xml version="1.0"?>\r\n<r><v>1</v></r>\r\n<!-- end -->\r\n';
    assert.equal(protect(xml, resolverOf({ v: action('mask') })), xml.replace('<v>1', '<v>*'));
  });
});
