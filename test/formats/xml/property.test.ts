// Property checks for the XML codec over generated documents, with fast-xml-parser as an
// independent reader: protected output parses to the expected values, and a reversible action
// applied twice gives back the exact bytes.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { FieldAction, FieldResolver } from '../../../src/formats/codec.ts';
import type { Scalar } from '../../../src/core/types.ts';
import { flattenXml, xmlCodec } from '../../../src/formats/xml/index.ts';

interface Leaf {
  kind: 'leaf';
  name: string;
  attributes: [string, string][];
  value: string;
  cdata: boolean;
}
interface Branch {
  kind: 'branch';
  name: string;
  attributes: [string, string][];
  children: Node[];
}
type Node = Leaf | Branch;

const reverse = (value: string): string => [...value].reverse().join('');
const PROTECTED = new Set(['card', 'id']);
const reverser: FieldAction = {
  removes: () => false,
  apply: (value: Scalar) => reverse(String(value)),
  applyBatch: (values: Scalar[]) => values.map((v) => reverse(String(v))),
};
const resolver: FieldResolver = { usesPaths: false, resolve: (name) => (PROTECTED.has(name) ? reverser : undefined) };

const chars = fc.constantFrom(...'ab Z09&<>"\'é€😀-_'.match(/./gu)!);
// Values without surrounding whitespace: the codec treats surrounding whitespace as layout.
const value = fc
  .array(chars, { maxLength: 12 })
  .map((cs) => cs.join('').trim());
const name = fc.constantFrom('a', 'b', 'card', 'p:card', 'name', 'q:item');
const attributes = fc.uniqueArray(fc.tuple(fc.constantFrom('id', 'x:id', 'k', 'lang'), value), {
  maxLength: 3,
  selector: ([n]) => n,
});

const tree = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ kind: fc.constant('leaf' as const), name, attributes, value, cdata: fc.boolean() }),
    fc.record({
      kind: fc.constant('branch' as const),
      name,
      attributes,
      children: fc.array(tie('node'), { minLength: 1, maxLength: 4 }),
    }),
  ),
})).node;

const escText = (v: string): string => v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escAttr = (v: string, q: string): string =>
  v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(q === '"' ? /"/g : /'/g, q === '"' ? '&quot;' : '&apos;');

/** Writes a tree; `layout` supplies whitespace and quote choices so formatting varies. */
function write(node: Node, layout: () => number, indent = ''): string {
  const quote = layout() % 2 === 0 ? '"' : "'";
  const attrs = node.attributes.map(([n, v]) => ` ${n}=${quote}${escAttr(v, quote)}${quote}`).join('');
  if (node.kind === 'leaf') {
    const content = node.cdata && !node.value.includes(']]>') ? `<![CDATA[${node.value}]]>` : escText(node.value);
    const pad = layout() % 3 === 0 ? ' ' : '';
    return `${indent}<${node.name}${attrs}>${pad}${content}${pad}</${node.name}>`;
  }
  const inner = node.children.map((c) => write(c, layout, indent + '  ')).join(layout() % 2 === 0 ? '\n' : '');
  return `${indent}<${node.name}${attrs}>\n${inner}\n${indent}<!-- end --></${node.name} >`;
}

const localName = (n: string): string => n.slice(n.indexOf(':') + 1);

/**
 * The tree a correct codec must produce: protected elements reversed with everything beneath them
 * (descendant text and attributes), protected attributes reversed.
 */
function expected(node: Node, inherited = false): Node {
  const matched = inherited || PROTECTED.has(localName(node.name));
  const attributes = node.attributes.map(([n, v]): [string, string] => [n, matched || PROTECTED.has(localName(n)) ? reverse(v) : v]);
  if (node.kind === 'leaf') return { ...node, attributes, value: matched ? reverse(node.value) : node.value, cdata: false };
  return { ...node, attributes, children: node.children.map((c) => expected(c, matched)) };
}

const parser = new XMLParser({
  ignoreAttributes: false,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  commentPropName: false,
});

describe('xmlCodec properties', () => {
  it('output is well-formed and parses to the expected values; double reversal restores the bytes', () => {
    fc.assert(
      fc.property(tree, fc.array(fc.nat(5), { minLength: 1, maxLength: 50 }), (root, choices) => {
        let i = 0;
        const layout = (): number => choices[i++ % choices.length];
        const xml = write(root, layout);
        const once = xmlCodec.protect(xml, resolver, {}) as string;
        assert.equal(XMLValidator.validate(once), true);
        assert.deepEqual(parser.parse(once), parser.parse(write(expected(root), () => 0)));
        assert.equal(xmlCodec.protect(once, resolver, {}), xml);
      }),
      { numRuns: 300 },
    );
  });

  it('flattening never fails on documents the codec accepts', () => {
    fc.assert(
      fc.property(tree, (root) => {
        const xml = write(root, () => 1);
        const flat = flattenXml(xmlCodec.protect(xml, resolver, {}), {});
        for (const row of flat.rows) assert.equal(row.length, flat.columns.length);
      }),
      { numRuns: 200 },
    );
  });
});
