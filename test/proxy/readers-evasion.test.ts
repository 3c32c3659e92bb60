// Issue 16, classes 1, 2, 3 and 6 (readers that differ from the upstream's) through the real
// forward proxy: every variant either reaches the recording upstream with the personal data
// protected, or is refused with nothing sent. Where Debian packages the upstream's own reader
// (PHP's parse_str, Rack's parse_nested_query, libxml2 through lxml), the forwarded bytes are also
// read by it and must not yield the value in clear. Property tests generate the variants.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { CARD, proxyConfig, rawPost, route, sendRaw, startTestProxy, startUpstream, type TestProxy, type Upstream } from './helpers.ts';
import { LXML_MISSING, LXML_PYTHON, lxmlText, PHP, PHP_MISSING, phpParse, RACK, RACK_MISSING, rackParse } from './real-readers.ts';

const NAME = 'Jane Doe';
const NAME_MASKED = 'J*** D**';
const MASKED_CARD = '************1111';

/** A request target holds no raw space: the app's client writes it as %20. */
const inTarget = (name: string): string => name.replace(/ /g, '%20');

describe('issue 16: readers that differ from the upstream\'s', () => {
  let upstream: Upstream;
  let p: TestProxy;

  before(async () => {
    upstream = await startUpstream();
    const at = (path: string, extra: Record<string, unknown> = {}) => ({ host: '127.0.0.1', port: upstream.port, path, ...extra });
    const mask = { manifest: 'customer', jobType: 'Mask' };
    p = await startTestProxy(
      proxyConfig({
        routes: [
          route('customers', { match: at('/v1/customers/**'), request: mask }),
          route('exact', { match: at('/exact/**', { pathMatch: 'exact' }), request: mask }),
          route('body', { match: at('/body'), request: mask }),
          route('query', { match: at('/query'), request: { ...mask, queryParams: ['name', 'firstName', 'cardNumber', 'customer'] } }),
          route('csv-semicolon', { match: at('/csv-semicolon'), request: { ...mask, delimiter: ';' } }),
          route('lax', { match: at('/lax'), request: mask, onError: 'passthrough' }),
          route('other', { match: at('/other'), request: mask, otherContent: 'passthrough' }),
        ],
      }),
    );
  });

  after(async () => {
    await p.close();
    await upstream.close();
  });

  interface Outcome {
    readonly status: number;
    readonly answer: string;
    /** What the upstream received (body), undefined when nothing arrived. */
    readonly received: Buffer | undefined;
    readonly url: string | undefined;
  }

  async function send(target: string, body: string | Buffer, contentType: string | undefined, method = 'POST'): Promise<Outcome> {
    const count = upstream.received.length;
    const res = await sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${upstream.port}${target}`, `127.0.0.1:${upstream.port}`, body, contentType, method));
    const got = upstream.received.slice(count);
    assert.ok(got.length <= 1);
    return { status: res.status, answer: res.body.toString('utf8'), received: got[0]?.body, url: got[0]?.url };
  }

  /** Refused with `status` and a problem quoting no value; no byte reached the upstream. */
  async function refused(label: string, target: string, body: string | Buffer, contentType: string | undefined, status: number, method = 'POST'): Promise<void> {
    const raw = upstream.rawBytes().length;
    const r = await send(target, body, contentType, method);
    assert.equal(r.status, status, `${label}: ${r.answer}`);
    assert.equal(r.received, undefined, `${label}: nothing may be sent upstream`);
    assert.equal(upstream.rawBytes().length, raw, `${label}: no byte may reach the upstream`);
    assert.equal(JSON.parse(r.answer).status, status, label);
    for (const s of [CARD, NAME, 'Jane']) assert.ok(!r.answer.includes(s), `${label}: the problem quotes a value`);
  }

  /** Forwarded (200) without the name or card in clear, in UTF-8 or UTF-16. */
  async function protectedOutcome(label: string, target: string, body: string | Buffer, contentType: string | undefined, method = 'POST'): Promise<Outcome> {
    const raw = upstream.rawBytes().length;
    const r = await send(target, body, contentType, method);
    assert.equal(r.status, 200, `${label}: ${r.answer}`);
    assert.ok(r.received !== undefined, label);
    const wire = upstream.rawBytes().subarray(raw);
    for (const s of [CARD, NAME]) {
      assert.ok(!wire.includes(s), `${label}: ${s} reached the upstream in clear`);
      assert.ok(!wire.includes(Buffer.from(s, 'utf16le')) && !wire.includes(Buffer.from(s, 'utf16le').swap16()), `${label}: ${s} reached the upstream in UTF-16`);
    }
    assert.ok(!decodeURIComponent((r.url ?? '').replace(/\+/g, ' ')).includes(NAME), `${label}: the name is in the forwarded query`);
    return r;
  }

  describe('class 1: a body is read in the encoding the upstream reads, or refused', () => {
    const utf7Document = '<?xml version="1.0" encoding="UTF-7"?>+ADw-customer+AD4-+ADw-name+AD4-Jane Doe+ADw-/name+AD4-+ADw-/customer+AD4-';

    test('XML declarations naming an encoding the gateway does not decode: 415, nothing sent', async () => {
      await refused('UTF-7', '/body', utf7Document, 'application/xml', 415);
      for (const encoding of ['UTF-7', 'utf-7', 'ISO-8859-1', 'windows-1252', 'Shift_JIS', 'EBCDIC-US', 'UTF-32', 'UCS-4', 'UTF-16']) {
        const doc = `<?xml version="1.0" encoding="${encoding}"?><customer><name>${NAME}</name></customer>`;
        await refused(encoding, '/body', doc, 'application/xml', 415);
        await refused(`${encoding}, single quotes`, '/body', doc.replaceAll('"', "'"), 'text/xml', 415);
        await refused(`${encoding}, untyped`, '/body', doc, 'text/plain', 415);
      }
      // Declarations not readable one way.
      for (const decl of ['<?xml version="1.0" encoding=UTF-7?>', '<?xml version="1.0" encoding="UTF-8" encoding="UTF-7"?>', '<?xml version="1.0"  standalone="yes" encoding="UTF-7"?>', ' <?xml version="1.0" encoding="UTF-7"?>']) {
        await refused(decl, '/body', `${decl}<customer><name>${NAME}</name></customer>`, 'application/xml', 415);
      }
    });

    test('marks and charsets of other encodings, and disagreements between them: 415, nothing sent', async () => {
      const xml = `<customer><name>${NAME}</name></customer>`;
      const json = JSON.stringify({ name: NAME });
      const cases: [string, Buffer, string | undefined][] = [
        ['UTF-32LE mark', Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), Buffer.from(json, 'utf16le')]), 'application/json'],
        ['UTF-32BE mark', Buffer.concat([Buffer.from([0, 0, 0xfe, 0xff]), Buffer.from(json)]), 'application/json'],
        ['UTF-7 mark', Buffer.from(`+/v8${json}`), 'application/json'],
        ['UTF-EBCDIC mark', Buffer.concat([Buffer.from([0xdd, 0x73, 0x66, 0x73]), Buffer.from(xml)]), 'application/xml'],
        ['EBCDIC <?xm', Buffer.from([0x4c, 0x6f, 0xa7, 0x94, 0x93, 0x40]), 'application/xml'],
        ['UTF-16LE without a mark (JSON)', Buffer.from(json, 'utf16le'), 'application/json'],
        ['UTF-16BE without a mark (XML)', Buffer.from(xml, 'utf16le').swap16(), 'application/xml'],
        ['UTF-16LE without a mark (CSV)', Buffer.from(`name,email\r\n${NAME},x\r\n`, 'utf16le'), 'text/csv'],
        ['charset=utf-7', Buffer.from(json), 'application/json; charset=utf-7'],
        ['charset=iso-8859-1', Buffer.from(json), 'application/json; charset=ISO-8859-1'],
        ['charset quoted', Buffer.from(json), 'application/json; charset="windows-1252"'],
        ['two charsets', Buffer.from(json), 'application/json; charset=utf-8; charset=utf-7'],
        ['RFC 2231 charset*', Buffer.from(json), "application/json; charset*=utf-7''"],
        ['charset with spaces', Buffer.from(json), 'application/json; CHARSET = UTF-7'],
        ['us-ascii with other bytes', Buffer.from(JSON.stringify({ name: 'Jäne Doe' })), 'application/json; charset=us-ascii'],
        ['utf-16 charset without a mark', Buffer.from(json, 'utf16le'), 'application/json; charset=utf-16'],
        ['utf-16be charset on a LE mark', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(json, 'utf16le')]), 'application/json; charset=utf-16be'],
        ['UTF-16 mark under charset=utf-8', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(json, 'utf16le')]), 'application/json; charset=utf-8'],
        ['UTF-16 body declaring UTF-8', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>${xml}`, 'utf16le')]), 'application/xml'],
        ['UTF-8 body declaring UTF-16', Buffer.from(`<?xml version="1.0" encoding="UTF-16"?>${xml}`), 'application/xml'],
        ['US-ASCII declared, other bytes', Buffer.from(`<?xml version="1.0" encoding="US-ASCII"?><customer><name>Jäne Doe</name></customer>`), 'application/xml'],
        ['CSV charset=latin1', Buffer.from(`name,email\r\n${NAME},x\r\n`), 'text/csv; charset=latin1'],
        ['form charset=utf-7', Buffer.from('name=Jane+Doe'), 'application/x-www-form-urlencoded; charset=utf-7'],
        ['form in UTF-16', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('name=Jane+Doe', 'utf16le')]), 'application/x-www-form-urlencoded'],
      ];
      for (const [label, body, type] of cases) await refused(label, '/body', body, type, 415);
    });

    test('UTF-8, US-ASCII and BOM-marked UTF-16 are read and written back in their own encoding', async () => {
      const xml16 = `<?xml version="1.0" encoding="UTF-16"?><customer><cardNumber>${CARD}</cardNumber><name>${NAME}</name></customer>`;
      const le = await protectedOutcome('UTF-16LE XML', '/body', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(xml16, 'utf16le')]), 'application/xml');
      assert.deepEqual([...le.received!.subarray(0, 2)], [0xff, 0xfe]);
      assert.equal(le.received!.subarray(2).toString('utf16le'), xml16.replace(CARD, MASKED_CARD).replace(NAME, NAME_MASKED));
      const json = JSON.stringify({ name: NAME, cardNumber: CARD });
      const be = await protectedOutcome('UTF-16BE JSON', '/body', Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(json, 'utf16le').swap16()]), 'application/json; charset=UTF-16');
      assert.deepEqual([...be.received!.subarray(0, 2)], [0xfe, 0xff]);
      assert.deepEqual(JSON.parse(Buffer.from(be.received!.subarray(2)).swap16().toString('utf16le')), { name: NAME_MASKED, cardNumber: MASKED_CARD });
      const ascii = await protectedOutcome('charset=us-ascii', '/body', json, 'application/json; charset=US-ASCII');
      assert.deepEqual(JSON.parse(ascii.received!.toString()), { name: NAME_MASKED, cardNumber: MASKED_CARD });
      await protectedOutcome('declared us-ascii', '/body', `<?xml version='1.0' encoding='us-ascii'?><customer><name>${NAME}</name></customer>`, 'application/xml');
      await protectedOutcome('declared UTF-8, charset utf8', '/body', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><customer><name>${NAME}</name></customer>`, 'application/xml; charset=utf8');
    });

    test('property: generated marks, charsets and declarations never bring the name to the upstream (nor to libxml2) in clear', async () => {
      const marks: Record<string, number[]> = { none: [], 'utf-8': [0xef, 0xbb, 0xbf], 'utf-16le': [0xff, 0xfe], 'utf-16be': [0xfe, 0xff], 'utf-32le': [0xff, 0xfe, 0, 0], 'utf-7': [0x2b, 0x2f, 0x76, 0x38] };
      const bytesOf = (text: string, as: string): Buffer =>
        as === 'utf-16le' ? Buffer.from(text, 'utf16le') : as === 'utf-16be' ? Buffer.from(text, 'utf16le').swap16() : as === 'latin1' ? Buffer.from(text, 'latin1') : Buffer.from(text, 'utf8');
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...Object.keys(marks)),
          fc.constantFrom('utf-8', 'utf-16le', 'utf-16be', 'latin1'),
          fc.constantFrom(undefined, 'utf-8', 'us-ascii', 'utf-16', 'iso-8859-1', 'utf-7'),
          fc.constantFrom(undefined, 'UTF-8', 'UTF-16', 'ISO-8859-1', 'UTF-7', 'US-ASCII'),
          fc.constantFrom('Jane Doe', 'Jäne Doe'),
          async (mark, as, charset, declared, value) => {
            const doc = `${declared === undefined ? '' : `<?xml version="1.0" encoding="${declared}"?>`}<customer><name>${value}</name></customer>`;
            const body = Buffer.concat([Buffer.from(marks[mark]!), bytesOf(doc, as)]);
            const raw = upstream.rawBytes().length;
            const r = await send('/body', body, `application/xml${charset === undefined ? '' : `; charset=${charset}`}`);
            const wire = upstream.rawBytes().subarray(raw);
            if (r.received === undefined) {
              assert.ok(r.status === 415 || r.status === 400, `${r.status} ${r.answer}`);
              assert.equal(wire.length, 0);
              return;
            }
            assert.equal(r.status, 200, r.answer);
            for (const enc of ['utf-8', 'utf-16le', 'utf-16be', 'latin1']) assert.ok(!wire.includes(bytesOf(value, enc)), `${value} in clear as ${enc}`);
            if (LXML_PYTHON !== undefined) assert.ok(!(lxmlText(r.received) ?? '').includes(value), 'libxml2 reads the name');
          },
        ),
        { numRuns: 60 },
      );
    });

    test('libxml2 (lxml) reads the forwarded UTF-16 document without the card, and reads the UTF-7 one the gateway refuses', async (t) => {
      if (LXML_PYTHON === undefined) {
        t.diagnostic(LXML_MISSING);
        console.log(`SKIPPED: ${LXML_MISSING}`);
        return;
      }
      // The attack is real: libxml2 decodes UTF-7 and finds the name element.
      assert.match(lxmlText(Buffer.from(utf7Document)) ?? '', /Jane Doe/);
      const xml16 = `<?xml version="1.0" encoding="UTF-16"?><customer><cardNumber>${CARD}</cardNumber></customer>`;
      const r = await protectedOutcome('UTF-16LE XML', '/body', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(xml16, 'utf16le')]), 'application/xml');
      const read = lxmlText(r.received!);
      assert.ok(read !== null && read.includes(MASKED_CARD) && !read.includes(CARD), String(read));
    });
  });

  describe('class 2: form and query names as servers read them', () => {
    test('names holding NUL or control characters are refused (form and query), nothing sent', async () => {
      for (const name of ['name%00x', 'name%00', '%00name', 'na%01me', 'name%1F', 'name%7F', 'name%C2%85', 'first%0Aname', 'name%09', 'name%2500x', 'name%250A']) {
        await refused(`form ${name}`, '/body', `${name}=Jane+Doe`, 'application/x-www-form-urlencoded', 400);
        await refused(`query ${name}`, `/query?${name}=Jane+Doe`, '', undefined, 400, 'GET');
      }
    });

    const MANGLED = [
      'name', 'NAME', 'first.name', 'first name', 'first+name', 'first%20name', '+firstName', '%20%20firstName', 'first[name', 'first_name',
      'FIRST-NAME', 'customer[firstName]', 'customer%5BfirstName%5D', 'customer[first_name]', 'customer[first.name]', 'customer.firstName',
      'customers[0][name]', 'customer[billing][name]', 'name[]', 'first%2Ename', 'fir%73tName', 'first%252Ename', 'customer%255BfirstName%255D',
    ];

    test('mangled names are protected in form bodies and queries; PHP and Rack read no name in clear', async (t) => {
      for (const name of MANGLED) {
        const form = await protectedOutcome(`form ${name}`, '/body', `${name}=Jane+Doe&x=1`, 'application/x-www-form-urlencoded');
        const query = await protectedOutcome(`query ${name}`, `/query?${inTarget(name)}=Jane+Doe&x=1`, '', undefined, 'GET');
        const queryText = Buffer.from((query.url ?? '').slice((query.url ?? '').indexOf('?') + 1));
        for (const [reader, available, parse] of [['PHP', PHP, phpParse], ['Rack', RACK, rackParse]] as const) {
          if (!available) continue;
          for (const [where, bytes] of [['form', form.received!], ['query', queryText]] as const) {
            const { parsed, values } = parse(bytes);
            assert.ok(!values.includes(NAME), `${reader} reads ${NAME} from the ${where} ${name}`);
            // Rack refuses some manglings outright (null); otherwise the pair after it was read.
            if (parsed !== null) assert.ok(values.includes('1'), `${reader} reads the ${where} ${name}`);
          }
        }
      }
      if (!PHP) {
        t.diagnostic(PHP_MISSING);
        console.log(`SKIPPED: ${PHP_MISSING}`);
      }
      if (!RACK) {
        t.diagnostic(RACK_MISSING);
        console.log(`SKIPPED: ${RACK_MISSING}`);
      }
    });

    test('PHP cuts a name at NUL: the attack the refusal closes', (t) => {
      if (!PHP) {
        t.diagnostic(PHP_MISSING);
        console.log(`SKIPPED: ${PHP_MISSING}`);
        return;
      }
      const { parsed } = phpParse(Buffer.from('name%00x=Jane+Doe&card.number=1& first=2'));
      assert.deepEqual(parsed, { name: NAME, card_number: '1', first: '2' });
    });

    test('property: generated manglings of firstName never reach the upstream in clear', async () => {
      const piece = fc.constantFrom('first', 'FIRST', 'First', 'fIrSt', 'fir%73t');
      const sep = fc.constantFrom('', '_', '-', '.', ' ', '+', '%20', '%2E', '[');
      const tail = fc.constantFrom('name', 'Name', 'NAME', 'n%61me');
      const wrap = fc.constantFrom((n: string) => n, (n: string) => `customer[${n}]`, (n: string) => `customer%5B${n}%5D`, (n: string) => `a[0][${n}]`, (n: string) => `${n}[]`, (n: string) => `  ${n}`, (n: string) => `customer.${n}`);
      await fc.assert(
        fc.asyncProperty(piece, sep, tail, wrap, fc.boolean(), async (a, s, b, w, inQuery) => {
          const name = w(`${a}${s}${b}`);
          if (inQuery) await protectedOutcome(`query ${name}`, `/query?${inTarget(name)}=Jane+Doe`, '', undefined, 'GET');
          else await protectedOutcome(`form ${name}`, '/body', `${name}=Jane+Doe`, 'application/x-www-form-urlencoded');
        }),
        { numRuns: 60 },
      );
    });
  });

  describe('class 3: paths servers route to the same handler', () => {
    const body = JSON.stringify({ name: NAME, cardNumber: CARD });
    const SPELLINGS = [
      '/v1/customers.json', '/v1/customers.xml', '/v1/customers.csv', '/v1/customers.html', '/v1/customers.txt', '/v1/customers.yaml',
      '/V1/Customers', '/V1/CUSTOMERS/1', '/v1/customers.', '/v1/customers..', '/v1/customers%20', '/v1/customers%20%20', '/v1/customers/',
      '/v1/customers//', '/v1/CUSTOMERS.JSON', '/v1/customers.json.', '/v1/customers.json%20', '/v1./customers', '/v1%20/customers',
      '/v1/customers/1.json', '/v1/customers.tar.gz', '/v1/customers;x=1.json', '/v1/%63ustomers.json',
    ];

    test('every spelling is protected on a lenient (default) route', async () => {
      for (const path of SPELLINGS) {
        const r = await protectedOutcome(path, path, body, 'application/json');
        assert.deepEqual(JSON.parse(r.received!.toString()), { name: NAME_MASKED, cardNumber: MASKED_CARD }, path);
      }
    });

    test('match.pathMatch: exact keeps case and suffixes significant (the documented opt-out)', async () => {
      const r = await send('/exact/x', body, 'application/json');
      assert.deepEqual(JSON.parse(r.received!.toString()), { name: NAME_MASKED, cardNumber: MASKED_CARD });
      const other = await send('/EXACT/x', JSON.stringify({ note: 'x' }), 'application/json');
      assert.equal(other.received?.toString(), JSON.stringify({ note: 'x' }));
    });

    test('property: generated spellings of /v1/customers are protected', async () => {
      const caseOf = (s: string, mask: number): string => [...s].map((c, i) => ((mask >> i) & 1 ? c.toUpperCase() : c)).join('');
      const suffix = fc.constantFrom('', '.json', '.XML', '.csv', '.html', '.txt', '.yaml', '.anything', '.', '..', '%20', '.%20', '/', '//', '.json.', '.json/');
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 14 }), suffix, fc.constantFrom('', '/1', '/1/cards'), async (mask, end, sub) => {
          const path = `/${caseOf('v1/customers', mask)}${sub}${end}`;
          await protectedOutcome(path, path, body, 'application/json');
        }),
        { numRuns: 80 },
      );
    });
  });

  describe('class 6: a CSV delimiter is certain or declared', () => {
    test('a leading blank line does not change the delimiter reading', async () => {
      for (const eol of ['\n', '\r\n', '\r']) {
        const csv = `${eol}name;email${eol}${NAME};jane.doe@example.com${eol}`;
        const r = await protectedOutcome(`blank line ${JSON.stringify(eol)}`, '/body', csv, 'text/csv');
        assert.ok(r.received!.toString().includes(`${NAME_MASKED};`), r.received!.toString());
        await protectedOutcome(`two blank lines ${JSON.stringify(eol)}`, '/body', `${eol}${eol}name;email${eol}${NAME};x${eol}`, 'text/csv');
      }
    });

    test('a header holding two candidate delimiters is refused unless the route declares one', async () => {
      for (const header of ['name;email,phone', 'name,email;phone', 'name\temail;x', 'name|email,x', '\nname;email,phone', 'name email', 'sep=;\nname;email']) {
        const csv = `${header}\n${NAME};x,y\n`;
        await refused(header, '/body', csv, 'text/csv', 400);
      }
      const r = await protectedOutcome('declared ;', '/csv-semicolon', `name;email,phone\n${NAME};x,y\n`, 'text/csv');
      assert.equal(r.received!.toString(), `name;email,phone\n${NAME_MASKED};x,y\n`);
    });
  });

  test('onError: passthrough forwards none of these refusals', async () => {
    await refused('UTF-7 XML', '/lax', `<?xml version="1.0" encoding="UTF-7"?><customer><name>${NAME}</name></customer>`, 'application/xml', 415);
    await refused('charset', '/lax', JSON.stringify({ name: NAME }), 'application/json; charset=utf-7', 415);
    await refused('NUL in a name', '/lax', 'name%00x=Jane+Doe', 'application/x-www-form-urlencoded', 400);
    await refused('two delimiters', '/lax', `name;email,x\n${NAME};a,b\n`, 'text/csv', 400);
  });

  test('otherContent: passthrough does not pass untyped JSON or XML in UTF-16 or UTF-32 unread: protected when marked UTF-16, else 415', async () => {
    const json = JSON.stringify({ name: NAME });
    const xml = `<customer><name>${NAME}</name></customer>`;
    const utf32le = (t: string): Buffer => Buffer.concat([...t].map((c) => { const b = Buffer.alloc(4); b.writeUInt32LE(c.codePointAt(0)!); return b; }));
    // Marked UTF-16 is decoded, so it is read and protected.
    for (const type of ['text/plain', 'application/octet-stream']) {
      await protectedOutcome(`UTF-16LE marked JSON as ${type}`, '/other', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(` ${json}`, 'utf16le')]), type);
      await protectedOutcome(`UTF-16BE marked XML as ${type}`, '/other', Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(xml, 'utf16le').swap16()]), type);
    }
    const cases: [string, Buffer][] = [
      ['UTF-16LE unmarked JSON', Buffer.from(json, 'utf16le')],
      ['UTF-16BE unmarked JSON', Buffer.from(json, 'utf16le').swap16()],
      ['UTF-32LE marked JSON', Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), utf32le(json)])],
      ['UTF-32LE unmarked XML', utf32le(xml)],
      ['EBCDIC <?xm', Buffer.from([0x4c, 0x6f, 0xa7, 0x94, 0x93, 0x40])],
    ];
    for (const [label, body] of cases) {
      for (const type of ['text/plain', 'application/octet-stream']) await refused(`${label} as ${type}`, '/other', body, type, 415);
    }
    // Text that is no document is still other content there.
    const prose = await send('/other', 'just words', 'text/plain');
    assert.equal(prose.received?.toString(), 'just words');
  });

  test('no value reached the proxy log', () => {
    for (const s of [CARD, NAME]) assert.ok(!p.logText().includes(s));
  });
});
