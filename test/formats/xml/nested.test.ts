// XML codec: a matched element protects everything beneath it (text runs, descendant elements and
// attributes) as a matched JSON key does; a descendant with its own rule uses that rule; Restrict
// removes the whole subtree. Unit tests with fake actions, then the real engine and manifest.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldAction, FieldResolver } from '../../../src/formats/codec.ts';
import type { JobType, Scalar } from '../../../src/core/types.ts';
import { xmlCodec } from '../../../src/formats/xml/index.ts';
import { testEngine, job } from '../../helpers/engine.ts';

interface Recorded {
  value: Scalar;
  location: string;
}

/** `tag` wraps a value as `<tag:value>`, so tests see which action protected which value. */
function action(tag: string, seen: Recorded[] = []): FieldAction {
  return {
    removes: () => tag === 'restrict',
    apply(value: Scalar, location: string | (() => string)): Scalar {
      seen.push({ value, location: typeof location === 'function' ? location() : location });
      return `${tag}(${String(value)})`;
    },
    applyBatch(values: Scalar[], location: (index: number) => string): Scalar[] {
      return values.map((v, i) => this.apply(v, () => location(i)));
    },
  };
}

function resolverOf(byName: Record<string, FieldAction>, usesPaths = false): FieldResolver {
  return { usesPaths, resolve: (name, path) => byName[path ?? name] ?? byName[name] };
}

const protect = (xml: string, resolver: FieldResolver): string => xmlCodec.protect(xml, resolver, {}) as string;

describe('xmlCodec: a matched element with child elements', () => {
  it('protects every descendant leaf with the matched action', () => {
    const xml = '<r>\n  <name>\n    <first>Jane</first>\n    <last>Doe</last>\n  </name>\n  <id>7</id>\n</r>';
    assert.equal(
      protect(xml, resolverOf({ name: action('m') })),
      '<r>\n  <name>\n    <first>m(Jane)</first>\n    <last>m(Doe)</last>\n  </name>\n  <id>7</id>\n</r>',
    );
  });

  it('protects deeply nested leaves, CDATA and escaped text', () => {
    const xml = '<name><a><b><c>x &amp; y</c></b><d><![CDATA[<z>]]></d></a></name>';
    assert.equal(
      protect(xml, resolverOf({ name: action('m') })),
      '<name><a><b><c>m(x &amp; y)</c></b><d><![CDATA[m(<z>)]]></d></a></name>',
    );
  });

  it('protects each non-whitespace text run of mixed content, and leaves layout alone', () => {
    const seen: Recorded[] = [];
    const xml = '<p><name>Jane <b>X</b> Doe</name> <name>\n  <i>A</i>\n  </name></p>';
    assert.equal(
      protect(xml, resolverOf({ name: action('m', seen) })),
      '<p><name>m(Jane) <b>m(X)</b> m(Doe)</name> <name>\n  <i>m(A)</i>\n  </name></p>',
    );
    assert.deepEqual(seen.map((s) => s.location), ['/p/name', '/p/name/b', '/p/name', '/p/name/i']);
  });

  it('reads a text run with comments inside as one value, as for a leaf; the comments stay', () => {
    const xml = '<name>Ja<!-- c -->ne<x/>  <!-- only a comment --> <y/></name>';
    assert.equal(protect(xml, resolverOf({ name: action('m') })), '<name>m(Jane)<!-- c --><x>m()</x>  <!-- only a comment --> <y>m()</y></name>');
  });

  it('protects attributes of the matched element and of its descendants (fail closed)', () => {
    const xml = `<r><name kind="legal" xmlns:p="urn:p"><p:first p:lang='en'>Jane</p:first></name><o kind="k"/></r>`;
    assert.equal(
      protect(xml, resolverOf({ name: action('m') })),
      `<r><name kind="m(legal)" xmlns:p="urn:p"><p:first p:lang='m(en)'>m(Jane)</p:first></name><o kind="k"/></r>`,
    );
  });

  it('lets a descendant element or attribute with its own rule use that rule', () => {
    const xml = '<customer><name>Jane</name><addr type="home"><street>Main</street><ssn>1</ssn></addr></customer>';
    const out = protect(xml, resolverOf({ customer: action('m'), ssn: action('s'), type: action('t') }));
    assert.equal(out, '<customer><name>m(Jane)</name><addr type="t(home)"><street>m(Main)</street><ssn>s(1)</ssn></addr></customer>');
  });

  it('removes a nested Restrict field inside a matched element', () => {
    const xml = '<r><name>\n  <first>Jane</first>\n  <ssn>1</ssn>\n</name></r>';
    assert.equal(protect(xml, resolverOf({ name: action('m'), ssn: action('restrict') })), '<r><name>\n  <first>m(Jane)</first>\n</name></r>');
  });

  it('resolves container elements by path when the plan uses paths', () => {
    const xml = '<r><name><first>Jane</first></name><other><name><first>Ann</first></name></other></r>';
    assert.equal(
      protect(xml, resolverOf({ '/r/name': action('m') }, true)),
      '<r><name><first>m(Jane)</first></name><other><name><first>Ann</first></name></other></r>',
    );
  });
});

describe('xmlCodec: Restrict on an element with child elements', () => {
  it('removes the whole element, children included, with its indentation', () => {
    const xml = '<r>\n  <id>7</id>\n  <ssn kind="x">\n    <v>123-45-6789</v>\n    <w/>\n  </ssn>\n</r>';
    assert.equal(protect(xml, resolverOf({ ssn: action('restrict') })), '<r>\n  <id>7</id>\n</r>');
  });

  it('runs no technique beneath a removed element', () => {
    const seen: Recorded[] = [];
    const xml = '<r><ssn a="1">pre <v b="2">1</v><name>Jane</name> post</ssn><name>Ann</name></r>';
    const out = protect(xml, resolverOf({ ssn: action('restrict'), a: action('m', seen), b: action('m', seen), name: action('m', seen) }));
    assert.equal(out, '<r><name>m(Ann)</name></r>');
    assert.deepEqual(seen.map((s) => s.value), ['Ann']);
  });

  it('removes only the element in mixed content, and a restricted root', () => {
    assert.equal(protect('<p>Dear <ssn><v>1</v></ssn>, hi</p>', resolverOf({ ssn: action('restrict') })), '<p>Dear , hi</p>');
    assert.equal(protect('<?xml version="1.0"?>\n<ssn><v>1</v></ssn>\n', resolverOf({ ssn: action('restrict') })), '<?xml version="1.0"?>\n');
  });

  it('removes a nested subtree inside a matched element, keeping the rest protected', () => {
    const xml = '<name>A<ssn><v>1</v></ssn>B</name>';
    assert.equal(protect(xml, resolverOf({ name: action('m'), ssn: action('restrict') })), '<name>m(A)m(B)</name>');
  });
});

describe('xmlCodec: nested elements through the real engine and the customer manifest', () => {
  const engine = testEngine();
  const run = (jobType: JobType, xml: string, context = {}): string =>
    engine.protectDocument(job('customer', jobType, context, 'XML'), xml).dataSet as string;

  it('Mask protects nested and mixed-content names', () => {
    assert.equal(run('Mask', '<c><name><first>Jane</first><last>Doe</last></name></c>'), '<c><name><first>J***</first><last>D**</last></name></c>');
    assert.equal(run('Mask', '<c><name>Jane <b>Xy</b> Doe</name></c>'), '<c><name>J*** <b>X*</b> D**</name></c>');
  });

  it('Restrict removes an ssn subtree', () => {
    const xml = '<c>\n  <ssn><v>123-45-6789</v></ssn>\n  <note>keep</note>\n</c>';
    const removed = '<c>\n  <note>keep</note>\n</c>';
    assert.equal(run('Restrict', xml), removed);
    assert.equal(run('Pseudonymise', xml, { countryCode: 'DE', dataOwningCountryCode: 'US' }), removed);
    assert.equal(run('Mask', xml), xml.replace('123-45', '***-**'));
  });

  it('keeps an empty restricted leaf (null values not protected) but removes its attributes', () => {
    assert.equal(run('Restrict', '<c><ssn kind="national"/><ssn></ssn></c>'), '<c><ssn/><ssn></ssn></c>');
  });

  for (const [forward, reverse] of [
    ['Pseudonymise', 'Reconstruct'],
    ['Encrypt', 'Decrypt'],
  ] as const) {
    it(`${forward} → ${reverse} of a subtree gives back the exact original`, () => {
      const xml =
        // Names of five letters or more: shorter ones are below the FF1 name format's minimum domain.
        '<?xml version="1.0"?>\n<c>\n  <name>\n    <first>Janet</first>\n    <last>Dooley &amp; Co</last>\n  </name>\n' +
        '  <name>Janet <b>Marie</b> Dooley</name>\n  <ssn><v>123-45-6789</v></ssn>\n  <note>keep</note>\n</c>\n';
      const once = run(forward, xml);
      for (const clear of ['Janet', 'Dooley', 'Marie', '123-45-6789']) assert.ok(!once.includes(clear), `${forward} left a value in clear`);
      assert.ok(once.includes('<note>keep</note>'));
      assert.equal(run(reverse, once), xml);
    });
  }
});
