// The proxy's reading of a body's type and characters (src/proxy/reading/body-kind.ts,
// body-charset.ts): media types, charset parameters, byte order marks, XML declarations, NULs.
// Never throws but the catalogue's refusals; decoded text written back gives the same bytes
// (a UTF-8 byte order mark aside, which decoding drops).

import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bodyKindOf, type BodyKind } from '../../../src/proxy/reading/body-kind.ts';
import { readBodyText } from '../../../src/proxy/reading/body-charset.ts';
import { mediaTypeOf } from '../../../src/proxy/reading/routes.ts';
import { refusedOr, type FuzzTarget } from '../harness.ts';

const mediaArb = fc.oneof(
  fc.constantFrom('', 'application/json', 'application/xml', 'text/xml', 'application/problem+json', 'application/soap+xml', 'text/csv', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream', 'text/plain', 'application/sql', 'APPLICATION/JSON ', 'application/json;charset=utf-8', 'application/json; charset="UTF-16"', 'text/xml; charset=us-ascii', 'application/json; charset=utf-8; charset=latin1', "application/json; charset*=utf-8''x", 'text/xml; charset=utf-7', 'application/json;;'),
  fc.string({ maxLength: 30 }),
);
const start = fc.constantFrom<number[]>([], [0xef, 0xbb, 0xbf], [0xff, 0xfe], [0xfe, 0xff], [0, 0, 0xfe, 0xff], [0x2b, 0x2f, 0x76], [0x3c, 0, 0x3f, 0], [0x7b], [0x3c]);
const textPiece = fc.constantFrom('<?xml version="1.0" encoding="UTF-8"?>', '<?xml version="1.0" encoding="utf-16"?>', "<?xml encoding='UTF-7'?>", '<a>', '{"a":1}', '[', 'é', '😀', '\u0000', 'x', ' ', '\r\n');
const bodyArb = fc.oneof(
  fc.tuple(start, fc.array(textPiece, { maxLength: 6 }), fc.constantFrom('utf8', 'utf16le', 'latin1') as fc.Arbitrary<BufferEncoding>).map(([s, p, enc]) => Buffer.concat([Buffer.from(s), Buffer.from(p.join(''), enc)])),
  fc.uint8Array({ maxLength: 48 }).map((u) => Buffer.from(u)),
);
const kinds: readonly BodyKind[] = ['JSON', 'XML', 'FORM', 'LIST', 'SQL'];

export const bodyKindTarget: FuzzTarget<{ contentType: string; routeType: string | undefined; body: Buffer }> = {
  name: 'body-kind',
  covers: 'proxy body reading (src/proxy/reading/body-kind.ts, body-charset.ts): bodyKindOf, readBodyText',
  arbitrary: fc.record({ contentType: mediaArb, routeType: fc.option(mediaArb, { nil: undefined }), body: bodyArb }),
  check({ contentType, routeType, body }) {
    const kind = bodyKindOf({ mediaType: mediaTypeOf(contentType), body, ...(routeType === undefined ? {} : { routeContentType: routeType }) });
    for (const k of kind === undefined ? kinds : [kind]) {
      const read = refusedOr(() => readBodyText(body, k, contentType));
      if (read === undefined) continue;
      const back = read.encode(read.text);
      const bom = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf;
      assert.ok(back.equals(bom ? body.subarray(3) : body), 'decoded text does not encode back to the same bytes');
    }
  },
  cost: 0.5,
};

export default bodyKindTarget;
