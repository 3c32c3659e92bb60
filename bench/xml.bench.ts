// XML codec throughput: protect (scan + splice) of a ~1 MB SOAP document with ~10% of leaf values
// masked, next to fast-xml-parser's XMLParser.parse + XMLBuilder.build of the same document.
// Run: node --import ./scripts/ts-loader.mjs bench/xml.bench.ts

import { XMLBuilder, XMLParser } from 'fast-xml-parser';
import type { FieldAction, FieldResolver } from '../src/formats/codec.ts';
import { flattenXml, xmlCodec } from '../src/formats/xml/index.ts';
import type { Scalar } from '../src/core/types.ts';
import { timeLoop } from './timing.ts';

const mask: FieldAction = {
  removes: () => false,
  apply: (value: Scalar) => {
    const text = String(value);
    return '*'.repeat(Math.max(0, text.length - 4)) + text.slice(-4);
  },
  applyBatch: (values: Scalar[]) => values,
};
// 2 of the 20 values per record (cardNumber, ssn) are protected: 10%.
const protectedNames = new Set(['cardNumber', 'ssn']);
const resolver: FieldResolver = {
  usesPaths: false,
  resolve: (name: string) => (protectedNames.has(name) ? mask : undefined),
};

function buildDocument(targetBytes: number): { xml: string; records: number } {
  const parts = [
    '<?xml version="1.0" encoding="UTF-8"?>\n',
    '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:c="urn:example:customers">\n',
    '  <soap:Header><c:requestId>r-0001</c:requestId></soap:Header>\n  <soap:Body>\n    <c:customers>\n',
  ];
  let size = parts.join('').length;
  let records = 0;
  while (size < targetBytes) {
    const i = records++;
    const record =
      `      <c:customer id="${i}" status="active">\n` +
      `        <!-- record ${i} -->\n` +
      `        <c:name>Customer ${i} O&apos;Brien</c:name>\n` +
      `        <c:email>customer${i}@example.com</c:email>\n` +
      `        <c:phone>+1-555-${String(i % 10000).padStart(4, '0')}</c:phone>\n` +
      `        <c:cardNumber>4111 1111 1111 ${String(i % 10000).padStart(4, '0')}</c:cardNumber>\n` +
      `        <c:ssn>123-45-${String(i % 10000).padStart(4, '0')}</c:ssn>\n` +
      `        <c:dateOfBirth>1985-04-${String((i % 28) + 1).padStart(2, '0')}</c:dateOfBirth>\n` +
      `        <c:address type="home">\n` +
      `          <c:street>${i} Main Street</c:street>\n          <c:city>Springfield</c:city>\n` +
      `          <c:postcode>12345</c:postcode>\n          <c:country>US</c:country>\n        </c:address>\n` +
      `        <c:account><c:iban>DE89370400440532013000</c:iban><c:currency>EUR</c:currency>` +
      `<c:balance>${(i * 13.37).toFixed(2)}</c:balance></c:account>\n` +
      `        <c:notes><![CDATA[Prefers <email> contact & paper invoices]]></c:notes>\n` +
      `        <c:segment>retail</c:segment><c:score>${i % 100}</c:score><c:vip>false</c:vip>\n` +
      `        <c:created>2024-01-01T00:00:00Z</c:created><c:updated>2024-06-01T00:00:00Z</c:updated>\n` +
      `      </c:customer>\n`;
    parts.push(record);
    size += record.length;
  }
  parts.push('    </c:customers>\n  </soap:Body>\n</soap:Envelope>\n');
  return { xml: parts.join(''), records };
}

function measure(label: string, budgetMs: number, run: () => unknown): number {
  const { perOpMs, perSecond } = timeLoop(run, budgetMs, 5);
  console.log(`${label.padEnd(48)} ${perOpMs.toFixed(2).padStart(8)} ms/op  ${perSecond.toFixed(1).padStart(7)} ops/s`);
  return perOpMs;
}

const { xml, records } = buildDocument(1024 * 1024);
console.log(`document: ${(xml.length / 1024).toFixed(0)} KiB, ${records} records, ${records * 2} of ${records * 20} leaf values protected`);

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@_' });
const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_' });
const budget = Number(process.env.BENCH_MS ?? 3000);

const baseline = measure('fast-xml-parser parse + build (baseline)', budget, () => builder.build(parser.parse(xml)));
const parseOnly = measure('fast-xml-parser parse only', budget, () => parser.parse(xml));
const ours = measure('xmlCodec.protect (10% masked)', budget, () => xmlCodec.protect(xml, resolver, {}));
const untouched = measure('xmlCodec.protect (no field matches)', budget, () =>
  xmlCodec.protect(xml, { usesPaths: false, resolve: () => undefined }, {}),
);
const flatten = measure('flattenXml', budget, () => flattenXml(xml, {}));

console.log(`protect speed vs parse+build: ${(baseline / ours).toFixed(2)}x (goal >= 0.5x)`);
console.log(`protect speed vs parse only:  ${(parseOnly / ours).toFixed(2)}x`);
console.log(`scan-only speed vs parse+build: ${(baseline / untouched).toFixed(2)}x; flatten vs parse+build: ${(baseline / flatten).toFixed(2)}x`);
