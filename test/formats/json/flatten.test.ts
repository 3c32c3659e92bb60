import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { flattenJson, createJsonFlattener } from '../../../src/formats/json/flatten.ts';
import { flattenJsonStream, type JsonStreamFlattenOptions } from '../../../src/formats/json/flatten-stream.ts';
import { flatTableToCsv, createFlatTableCsvStream } from '../../../src/formats/list/csv-writer.ts';
import { DpgError } from '../../../src/core/errors.ts';

function table(doc: unknown): { columns: readonly string[]; rows: string[][] } {
  const t = flattenJson(doc, {});
  return { columns: t.columns, rows: [...t.rows].map((r) => [...r]) };
}

async function streamCsv(text: string, cuts: number[] = [], options: JsonStreamFlattenOptions = {}): Promise<string> {
  const bytes = Buffer.from(text, 'utf8');
  const pieces: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    pieces.push(bytes.subarray(from, cut));
    from = cut;
  }
  const out = await flattenJsonStream(Readable.from(pieces), options);
  const chunks: Buffer[] = [];
  for await (const chunk of out) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function isDpg(code: string, pattern: RegExp, secret?: string) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof DpgError, String(err));
    assert.equal(err.code, code);
    assert.match(err.message, pattern);
    if (secret !== undefined) assert.ok(!err.message.includes(secret), 'message leaks content');
    return true;
  };
}

const CUSTOMERS = [
  { name: 'Ann', address: { city: 'Oslo', zip: '0150' }, items: [{ sku: 'A1', qty: 2 }] },
  { name: 'Bob', phone: null, items: [{ sku: 'B1' }, { sku: 'B2', qty: 1 }], vip: true },
];

describe('flattenJson', () => {
  it('gives one row per array element, dotted paths, union of columns in first-seen order', () => {
    assert.deepEqual(table(CUSTOMERS), {
      columns: ['name', 'address.city', 'address.zip', 'items.0.sku', 'items.0.qty', 'phone', 'items.1.sku', 'items.1.qty', 'vip'],
      rows: [
        ['Ann', 'Oslo', '0150', 'A1', '2', '', '', '', ''],
        ['Bob', '', '', 'B1', '', '', 'B2', '1', 'true'],
      ],
    });
  });

  it('gives one row for an object, and parses JSON text (BOM allowed)', () => {
    assert.deepEqual(table('\ufeff{"a":{"b":[1,2]},"c":"x"}'), { columns: ['a.b.0', 'a.b.1', 'c'], rows: [['1', '2', 'x']] });
  });

  it('renders strings raw, numbers and booleans as JSON text, null empty, empty containers as {} and []', () => {
    assert.deepEqual(table([{ s: 'a,"b"', n: -1.5e-7, t: false, z: null, o: {}, l: [] }]), {
      columns: ['s', 'n', 't', 'z', 'o', 'l'],
      rows: [['a,"b"', '-1.5e-7', 'false', '', '{}', '[]']],
    });
    assert.deepEqual(table([1, 'two', null]), { columns: ['value'], rows: [['1'], ['two'], ['']] });
  });

  it('keeps __proto__ and other odd keys as plain data, never colliding', () => {
    const doc = JSON.parse('[{"__proto__":{"polluted":"yes"},"constructor":"c","a.b":1,"a":{"b":2},"":3}]');
    assert.deepEqual(table(doc), {
      columns: ['__proto__.polluted', 'constructor', '["a.b"]', 'a.b', '[""]'],
      rows: [['yes', 'c', '1', '2', '3']],
    });
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('rejects bad JSON text with a position only, and bounds depth and columns', () => {
    assert.throws(() => flattenJson('{"secret": tru}', {}), isDpg('MALFORMED_DATA_SET', /does not parse at line 1, column 12/, 'secret'));
    let deep: unknown = 'x';
    for (let i = 0; i < 20; i++) deep = { d: deep };
    assert.throws(() => createJsonFlattener({ maxDepth: 10 })(deep, {}), isDpg('MALFORMED_DATA_SET', /deeper than 10/));
    const wide = [Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i]))];
    assert.throws(() => [...createJsonFlattener({ maxColumns: 10 })(wide, {}).rows], isDpg('PAYLOAD_TOO_LARGE', /more than 10 columns/));
  });

  it('writes the table as RFC 4180 CSV, whole or streamed', async () => {
    const t = flattenJson([{ a: 'x,y', b: 'line\nbreak' }, { c: 'q"q' }], {});
    const expected = 'a,b,c\r\n"x,y","line\nbreak",\r\n,,"q""q"\r\n';
    assert.equal(flatTableToCsv(t), expected);
    const chunks: Buffer[] = [];
    for await (const c of createFlatTableCsvStream(t, { rowsPerChunk: 1 })) chunks.push(Buffer.from(c as Buffer));
    assert.equal(Buffer.concat(chunks).toString('utf8'), expected);
  });
});

describe('flattenJsonStream', () => {
  it('matches the in-memory flattener at every chunk cut', async () => {
    const text = ' \ufeff'.slice(1) + JSON.stringify([...CUSTOMERS, { 'x,y': 'é😀', items: [] }, 7], null, 1);
    const expected = flatTableToCsv(flattenJson(text, {}));
    const bytes = Buffer.from(text, 'utf8');
    for (let cut = 0; cut <= bytes.length; cut += 3) {
      assert.equal(await streamCsv(text, [Math.floor(cut / 2), cut]), expected, `cut at ${cut}`);
    }
    assert.equal(await streamCsv('\ufeff[{"a":1}]', [1, 2]), 'a\r\n1\r\n');
    assert.equal(await streamCsv('{"one":{"object":"x"}}'), 'one.object\r\nx\r\n');
    assert.equal(await streamCsv('[]'), '\r\n');
  });

  it('matches the in-memory flattener on random arrays (property)', async () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    await fc.assert(
      fc.asyncProperty(fc.array(json, { maxLength: 5 }), fc.nat(), async (doc, cut) => {
        const text = JSON.stringify(doc);
        const expected = flatTableToCsv(flattenJson(text, {}));
        assert.equal(await streamCsv(text, [cut % (text.length + 1)]), expected);
      }),
      { numRuns: 200 },
    );
  });

  it('protects each element with its index before flattening, and checks before output', async () => {
    const seen: number[] = [];
    let checked = 0;
    const out = await streamCsv('[{"ssn":"1"},{"ssn":"2"}]', [], {
      protectElement(elementText, index) {
        seen.push(index);
        return JSON.stringify({ ssn: `***${(JSON.parse(elementText) as { ssn: string }).ssn}` });
      },
      beforeRelease: () => checked++,
    });
    assert.deepEqual(seen, [0, 1]);
    assert.equal(checked, 1);
    assert.equal(out, 'ssn\r\n***1\r\n***2\r\n');
  });

  it('spools to a private temp file past its memory budget and always removes it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-flatten-test-'));
    try {
      const doc = Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `n${i}`, ...(i % 1000 === 999 ? { late: 'L' } : {}) }));
      const text = JSON.stringify(doc);
      const cuts = Array.from({ length: Math.floor(text.length / 1000) }, (_, i) => (i + 1) * 1000);
      const out = await streamCsv(text, cuts, { memoryBudgetBytes: 10_000, tempDir: dir });
      assert.equal(out, flatTableToCsv(flattenJson(doc, {})));
      assert.ok(out.startsWith('id,name,late\r\n0,n0,\r\n'));
      assert.deepEqual(readdirSync(dir), []);

      // An error after spooling started removes the file too.
      await assert.rejects(streamCsv(text.slice(0, -1), cuts, { memoryBudgetBytes: 10_000, tempDir: dir }), isDpg('MALFORMED_DATA_SET', /not closed/));
      assert.deepEqual(readdirSync(dir), []);

      // So does an output stream destroyed before it is read.
      const stream = await flattenJsonStream(Readable.from([Buffer.from(text)]), { memoryBudgetBytes: 10_000, tempDir: dir });
      assert.equal(readdirSync(dir).length, 1);
      stream.destroy();
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(readdirSync(dir), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects malformed arrays with an element number and no content', async () => {
    const cases: [string, RegExp][] = [
      ['[{"a":"secret"},]', /element is missing/],
      ['[,{"a":"secret"}]', /element is missing/],
      ['[{"a":"secret"}', /not closed/],
      ['[{"a":"secret"}] x', /after the end/],
      ['"secret"', /array or object was expected/],
      ['', /empty/],
      ['[{"a":secret}]', /element 0 does not parse at line 1, column 6/],
      ['[1,{"a":"secret"}}]', /unbalanced|does not parse/],
      ['{"a":"secret"', /does not parse at line 1/],
    ];
    for (const [text, pattern] of cases) {
      await assert.rejects(streamCsv(text), isDpg('MALFORMED_DATA_SET', pattern, 'secret'), text);
    }
  });

  it('bounds one element and the column count', async () => {
    await assert.rejects(
      streamCsv(`[{"a":1},{"big":"${'s'.repeat(5000)}"}]`, [100, 2000], { maxElementBytes: 1000 }),
      isDpg('PAYLOAD_TOO_LARGE', /element 1 exceeds the limit of 1000 bytes/),
    );
    await assert.rejects(streamCsv('[{"a":1,"b":2,"c":3}]', [], { maxColumns: 2 }), isDpg('PAYLOAD_TOO_LARGE', /more than 2 columns/));
  });
});
