// XML codec against hostile and broken input: XXE, entity expansion, deep nesting, malformed
// documents (position given, input never echoed).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FieldAction, FieldResolver } from '../../../src/formats/codec.ts';
import type { Scalar } from '../../../src/core/types.ts';
import { DpgError } from '../../../src/core/errors.ts';
import { createXmlCodec, flattenXml, xmlCodec } from '../../../src/formats/xml/index.ts';

const mask: FieldAction = {
  removes: () => false,
  apply: (value: Scalar) => String(value).replace(/./g, '*'),
  applyBatch: (values: Scalar[]) => values,
};
const everything: FieldResolver = { usesPaths: false, resolve: () => mask };

function rejects(xml: string, reason: RegExp, codec = xmlCodec): DpgError {
  let caught: unknown;
  try {
    codec.protect(xml, everything, {});
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof DpgError, 'expected a DpgError');
  assert.equal(caught.code, 'MALFORMED_DATA_SET');
  assert.match(caught.message, /^XML does not parse at line \d+, column \d+: /);
  assert.match(caught.message, reason);
  return caught;
}

describe('xmlCodec: external entities (XXE)', () => {
  it('refuses a SYSTEM entity and never reads the file', () => {
    const xml = '<?xml version="1.0"?>\n<!DOCTYPE r [\n  <!ENTITY xxe SYSTEM "file:///etc/passwd">\n]>\n<r><v>&xxe;</v></r>';
    const err = rejects(xml, /line 3, column 3: entity declarations are not accepted/);
    assert.doesNotMatch(err.message, /root:|passwd|xxe/);
  });

  it('refuses parameter entities (the usual out-of-band XXE route)', () => {
    rejects('<!DOCTYPE r [ %remote; ]><r/>', /parameter entity references/);
    rejects('<!DOCTYPE r [ <!ATTLIST r a CDATA %x;> ]><r/>', /parameter entity references/);
  });

  it('refuses references to entities that are not predefined', () => {
    rejects('<r>&nbsp;</r>', /undeclared entity/);
    rejects('<r a="&ext;"/>', /undeclared entity/);
  });

  describe('a DOCTYPE naming an external DTD', () => {
    let server: Server;
    let requests = 0;
    let url = '';
    before(async () => {
      server = createServer((_req, res) => {
        requests++;
        res.end('<!ENTITY leak "LEAKED">');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/evil.dtd`;
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('is kept as written and never fetched', async () => {
      const xml = `<!DOCTYPE r SYSTEM "${url}">\n<r><v>secret</v></r>`;
      assert.equal(xmlCodec.protect(xml, everything, {}), xml.replace('secret', '******'));
      rejects(`<!DOCTYPE r SYSTEM "${url}">\n<r><v>&leak;</v></r>`, /undeclared entity/);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(requests, 0);
    });
  });

  it('accepts harmless internal subsets (element and attribute declarations without defaults, comments)', () => {
    const xml = '<!DOCTYPE r [\n <!ELEMENT r (#PCDATA)>\n <!ATTLIST r a CDATA #IMPLIED b (x|y) #REQUIRED>\n <!-- a "quoted" note -->\n]>\n<r a="1">v</r>';
    assert.equal(xmlCodec.protect(xml, everything, {}), xml.replace('a="1">v', 'a="*">*'));
  });
});

describe('xmlCodec: DTD attribute defaults (issue 8, class 7)', () => {
  // A parser adds a declared default to every element without the attribute: a card number the
  // document never shows where it is used, so one the gateway could not protect.
  for (const [what, decl] of [
    ['a CDATA default', '<!ATTLIST c cardNumber CDATA "4111111111111111">'],
    ['a #FIXED default', "<!ATTLIST c cardNumber CDATA #FIXED '4111111111111111'>"],
    ['an enumerated default', '<!ATTLIST c kind (a|b) "a" cardNumber CDATA "4111111111111111">'],
    ['a default after other attributes', '<!ATTLIST c id ID #IMPLIED\n  cardNumber CDATA "4111111111111111">'],
  ]) {
    it(`refuses ${what} with a position, never echoing it`, () => {
      const err = rejects(`<!DOCTYPE c [\n  ${decl}\n]>\n<c/>`, /line [23], column \d+: attribute default values are not accepted/);
      assert.doesNotMatch(err.message, /4111/);
    });
  }
});

describe('xmlCodec: entity expansion (billion laughs)', () => {
  it('fails fast, before any expansion', () => {
    const lines = ['<?xml version="1.0"?>', '<!DOCTYPE lolz [', ' <!ENTITY lol "lol">'];
    for (let i = 1; i <= 9; i++) {
      const prev = i === 1 ? 'lol' : `lol${i - 1}`;
      lines.push(` <!ENTITY lol${i} "${`&${prev};`.repeat(10)}">`);
    }
    lines.push(']>', '<lolz>&lol9;</lolz>');
    // Refused at the declaration: nothing is expanded (the heap shows it; no clock on a shared machine).
    const heapBefore = process.memoryUsage().heapUsed;
    rejects(lines.join('\n'), /entity declarations are not accepted/);
    assert.ok(process.memoryUsage().heapUsed - heapBefore < 50 * 1024 * 1024, 'bounded in memory');
  });
});

describe('xmlCodec: nesting depth', () => {
  const nested = (depth: number): string => '<a>'.repeat(depth) + '<v>1</v>' + '</a>'.repeat(depth);

  it('refuses 10,000 levels with a clear error (default limit 256)', () => {
    rejects(nested(10_000), /line 1, column 769: elements nest deeper than 256 levels/);
  });

  it('accepts exactly the limit', () => {
    assert.equal(xmlCodec.protect(nested(255), everything, {}), nested(255).replace('<v>1', '<v>*'));
  });

  it('handles 10,000 levels without stack overflow when the limit allows it', () => {
    const deep = createXmlCodec({ maxDepth: 20_000 });
    assert.equal(deep.protect(nested(10_000), everything, {}), nested(10_000).replace('<v>1', '<v>*'));
  });

  it('applies the same limit when flattening', () => {
    assert.throws(() => flattenXml(nested(10_000), {}), { code: 'MALFORMED_DATA_SET' });
  });
});

describe('xmlCodec: large input', () => {
  // The time is measured in bench/xml.bench.ts; here the outcome (a clock failed on a loaded machine).
  it('protects huge single values (text, CDATA, attribute)', () => {
    const big = 'x&amp;'.repeat(500_000);
    const xml = `<r a="${big}"><v>${big}</v><w><![CDATA[${'y'.repeat(3_000_000)}]]></w></r>`;
    const out = xmlCodec.protect(xml, everything, {}) as string;
    assert.equal(out.length, xml.length - 4 * 2 * 500_000);
  });

  it('checks duplicates among many attributes without quadratic cost', () => {
    const attrs = Array.from({ length: 20_000 }, (_, i) => ` a${i}="${i}"`).join('');
    assert.doesNotThrow(() => xmlCodec.protect(`<r${attrs}/>`, { usesPaths: false, resolve: () => undefined }, {}));
    rejects(`<r${attrs} a7="x"/>`, /duplicate attribute/);
  });
});

describe('xmlCodec: malformed input', () => {
  // Every case embeds this marker; no error message may contain it (or any other input).
  const S = 'S3CRET-4111';
  const cases: [string, string, RegExp][] = [
    ['unclosed tag', `<r><v>${S}</v>`, /line 1, column 1: element is never closed/],
    ['mismatched end tag', `<r>\n  <v>${S}</w>\n</r>`, /line 2, column \d+: end tag does not match/],
    ['stray end tag', `<r/></${S}>`, /end tag without a matching start tag/],
    ['text after root', `<r/>${S}`, /content after the root element/],
    ['second root', `<r/><r>${S}</r>`, /content after the root element/],
    ['text before root', `${S}<r/>`, /text before the root element/],
    ['empty document', '', /no root element/],
    ['only a comment', `<!-- ${S} -->`, /no root element/],
    ['unquoted attribute', `<r a=${S}/>`, /attribute value must be quoted/],
    ['attribute without value', `<r ${S}/>`, /attribute name must be followed by '='/],
    ['duplicate attribute', `<r a="1" a="${S}"/>`, /duplicate attribute/],
    ['attributes run together', `<r a="1"b="${S}"/>`, /separated by whitespace/],
    ['< in attribute', `<r a="<${S}"/>`, /'<' is not allowed in an attribute value/],
    ['bare ampersand', `<r>${S} & more</r>`, /'&' does not start a valid reference/],
    ['bad char reference', `<r>&#0;${S}</r>`, /character reference to a character not allowed/],
    ['invalid name', `<r><1${S}/></r>`, /'<' does not start a tag/],
    ['unclosed comment', `<r><!-- ${S}</r>`, /comment is not closed/],
    ['double dash in comment', `<r><!-- a -- ${S} --></r>`, /'--' is not allowed inside a comment/],
    ['unclosed CDATA', `<r><![CDATA[${S}</r>`, /CDATA section is not closed/],
    [']]> in text', `<r>${S}]]></r>`, /']]>' is not allowed in text/],
    ['misplaced declaration', `<r/>\n<?xml version="1.0"?><!-- ${S} -->`, /XML declaration is only allowed at the start/],
    ['control character', `<r>${S}\u0001</r>`, /character not allowed in XML/],
    ['unclosed attribute', `<r a="${S}`, /attribute value is not closed/],
    ['unfinished tag', `<r><v a="1"`, /tag is not closed/],
    ['DOCTYPE after root', `<r/><!DOCTYPE r><!-- ${S} -->`, /DOCTYPE is only allowed once/],
    ['unknown markup', `<r><!ELEMENT ${S}></r>`, /unrecognised markup/],
  ];
  for (const [label, xml, reason] of cases) {
    it(`${label}: position given, input not echoed`, () => {
      const err = rejects(xml, reason);
      assert.ok(!err.message.includes(S), 'message must not echo input');
      assert.ok(!err.message.includes('<r'), 'message must not echo markup');
    });
  }

  it('produces no partial output: protection of earlier values is discarded with the error', () => {
    let applied = 0;
    const counting: FieldResolver = {
      usesPaths: false,
      resolve: () => ({ removes: () => false, apply: (v: Scalar) => (applied++, v), applyBatch: (v: Scalar[]) => v }),
    };
    assert.throws(() => xmlCodec.protect('<r><v>1</v><v>2</v><broken</r>', counting, {}), { code: 'MALFORMED_DATA_SET' });
    assert.ok(applied <= 2);
  });
});

describe('xmlCodec: declared encodings (issue 16, class 1)', () => {
  const unsupported = (xml: string): void => {
    assert.throws(
      () => xmlCodec.protect(xml, everything, {}),
      (err: unknown) => err instanceof DpgError && err.code === 'UNSUPPORTED_DATA_SET_TYPE' && !err.message.includes('Jane'),
      xml,
    );
  };

  it('refuses a document declaring an encoding it does not decode, or declaring one unreadably', () => {
    for (const enc of ['UTF-7', 'utf-7', 'ISO-8859-1', 'windows-1252', 'EBCDIC-US', 'UTF-32', 'Shift_JIS', 'UTF_8']) {
      unsupported(`<?xml version="1.0" encoding="${enc}"?><r>Jane</r>`);
      unsupported(`<?xml version='1.0' encoding='${enc}' standalone='no'?><r>Jane</r>`);
    }
    unsupported('<?xml version="1.0" encoding=UTF-7?><r>Jane</r>');
    unsupported('<?xml version="1.0" encoding="UTF-8" encoding="UTF-7"?><r>Jane</r>');
    unsupported('<?xml version="1.0" encoding="US-ASCII"?><r>Jäne</r>');
  });

  it('reads UTF-8, US-ASCII (ASCII text) and UTF-16 declarations, and none', () => {
    for (const decl of ['', '<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-8"?>', '<?xml version="1.0" encoding="utf8"?>', "<?xml version='1.1' encoding='us-ascii' standalone='yes'?>", '<?xml version="1.0" encoding="UTF-16"?>']) {
      assert.equal(xmlCodec.protect(`${decl}<r>ab</r>`, everything, {}), `${decl}<r>**</r>`);
    }
  });
});
