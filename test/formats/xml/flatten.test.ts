// flattenXml: rows, column paths, indices for repeated elements, element-name column.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { flattenXml, XML_ELEMENT_COLUMN } from '../../../src/formats/xml/index.ts';

const table = (xml: string): { columns: string[]; rows: string[][] } => {
  const flat = flattenXml(xml, {});
  return { columns: [...flat.columns], rows: [...flat.rows].map((row) => [...row]) };
};

describe('flattenXml', () => {
  it('makes one row per repeated child of the root, columns in first-seen order', () => {
    const xml = `<?xml version="1.0"?>
<customers>
  <customer id="1"><name>Ann</name><address type="home"><city>Oslo</city></address></customer>
  <customer id="2"><name>Bob &amp; Co</name><email>b@example.com</email></customer>
</customers>`;
    assert.deepEqual(table(xml), {
      columns: ['@id', 'name', 'address.@type', 'address.city', 'email'],
      rows: [
        ['1', 'Ann', 'home', 'Oslo', ''],
        ['2', 'Bob & Co', '', '', 'b@example.com'],
      ],
    });
  });

  it('looks through single-child wrappers such as a SOAP envelope and body', () => {
    const xml = `<soap:Envelope xmlns:soap="urn:s" xmlns:c="urn:c"><soap:Body><c:list>
      <c:item><c:sku>A</c:sku></c:item><c:item><c:sku><![CDATA[B<1>]]></c:sku></c:item>
    </c:list></soap:Body></soap:Envelope>`;
    assert.deepEqual(table(xml), { columns: ['sku'], rows: [['A'], ['B<1>']] });
  });

  it('makes one row of the whole document when nothing repeats at the top', () => {
    const xml = `<order id="9"><customer><name>Ann</name></customer><total>12</total></order>`;
    assert.deepEqual(table(xml), { columns: ['@id', 'customer.name', 'total'], rows: [['9', 'Ann', '12']] });
  });

  it('indexes elements that repeat anywhere under the same path, in every row', () => {
    const xml = `<orders>
  <order><items><item><sku>a</sku></item></items></order>
  <order><items><item><sku>b</sku></item><item><sku>c</sku></item></items></order>
</orders>`;
    assert.deepEqual(table(xml), {
      columns: ['items.item.0.sku', 'items.item.1.sku'],
      rows: [
        ['a', ''],
        ['b', 'c'],
      ],
    });
  });

  it('adds an element-name column when rows come from differently named elements', () => {
    const xml = '<batch><header><count>2</count></header><record>x</record><record>y</record></batch>';
    assert.deepEqual(table(xml), {
      columns: [XML_ELEMENT_COLUMN, 'count', 'record'],
      rows: [
        ['header', '2', ''],
        ['record', '', 'x'],
        ['record', '', 'y'],
      ],
    });
  });

  it('keeps text of elements with children and leaves namespace declarations out', () => {
    const xml = '<p xmlns="urn:x" xmlns:a="urn:a" a:lang="en">Dear <b>Ann</b>, hi</p>';
    assert.deepEqual(table(xml), { columns: ['@lang', 'p', 'b'], rows: [['en', 'Dear , hi', 'Ann']] });
  });

  it('refuses malformed documents and non-strings', () => {
    assert.throws(() => flattenXml('<a><b></a>', {}), { code: 'MALFORMED_DATA_SET' });
    assert.throws(() => flattenXml(42, {}), { code: 'INVALID_REQUEST' });
  });
});
