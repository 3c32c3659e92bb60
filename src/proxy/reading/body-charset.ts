// Which characters a routed body's bytes are. The upstream decodes a body by its byte order mark,
// its Content-Type charset or (XML) its own declaration; the gateway protects the text it decodes.
// If the two decodings can differ, the upstream may read a value the gateway never saw
// (`encoding="UTF-7"` hides `<cardNumber>` from a UTF-8 reader). So a body is decoded here only
// when every one of those signals names an encoding the gateway decodes itself — UTF-8, US-ASCII
// (all bytes below 0x80) or UTF-16 marked by its byte order mark — and they agree; anything else is
// refused (415), whatever `onError` says (issue 16, class 1; docs/proxy.md "Body types").

import { ASCII_NAMES, declaredEncoding, UTF16_NAMES, UTF8_NAMES } from '../../formats/xml/declaration.ts';
import { printableType, RefusedInputError, type BodyKind } from './body-kind.ts';

/** The decoded text of a body, and how protected text is written back in the same encoding. */
export interface BodyText {
  readonly text: string;
  readonly encoding: 'utf-8' | 'utf-16le' | 'utf-16be';
  encode(text: string): Buffer;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const utf16le = new TextDecoder('utf-16le', { fatal: true });
const utf16be = new TextDecoder('utf-16be', { fatal: true });

/**
 * Signatures of encodings the gateway does not decode, at the start of a body: byte order marks
 * (UTF-32 both ways, UTF-7, UTF-EBCDIC, UTF-1, SCSU, BOCU-1, GB18030) and the first bytes of `<?xm`
 * that XML parsers auto-detect without a mark (XML 1.0 Appendix F: UTF-32, UTF-16, EBCDIC).
 */
const FOREIGN_SIGNATURES: readonly (readonly number[])[] = [
  [0x00, 0x00, 0xfe, 0xff],
  [0xff, 0xfe, 0x00, 0x00],
  [0x2b, 0x2f, 0x76],
  [0xdd, 0x73, 0x66, 0x73],
  [0xf7, 0x64, 0x4c],
  [0x0e, 0xfe, 0xff],
  [0xfb, 0xee, 0x28],
  [0x84, 0x31, 0x95, 0x33],
  [0x00, 0x00, 0x00, 0x3c],
  [0x3c, 0x00, 0x00, 0x00],
  [0x00, 0x3c, 0x00, 0x3f],
  [0x3c, 0x00, 0x3f, 0x00],
  [0x4c, 0x6f, 0xa7, 0x94],
];

const startsWith = (body: Buffer, sig: readonly number[]): boolean => body.length >= sig.length && sig.every((b, i) => body[i] === b);

function refused(detail: string): RefusedInputError {
  return new RefusedInputError('UNSUPPORTED_DATA_SET_TYPE', `${detail}: only UTF-8, US-ASCII and UTF-16 with a byte order mark are read, so it cannot be protected`);
}

/** Every `charset` (and `charset*`) parameter of a Content-Type, lower case and unquoted. */
export function charsetsOf(contentType: string | undefined): string[] {
  if (!contentType) return [];
  const out: string[] = [];
  const parts = contentType.split(';');
  for (let i = 1; i < parts.length; i++) {
    const eq = parts[i].indexOf('=');
    const key = eq === -1 ? '' : parts[i].slice(0, eq).trim().toLowerCase();
    // `charset*` (RFC 2231) too: a reader honouring it reads its value, which is then never a plain name here.
    if (key !== 'charset' && !key.startsWith('charset*')) continue;
    out.push(parts[i].slice(eq + 1).trim().replace(/^"|"$/g, '').toLowerCase());
  }
  return out;
}

/**
 * Decodes a routed body read as `kind`, or refuses it (RefusedInputError, 415). Refused:
 * - a signature of another encoding (FOREIGN_SIGNATURES), or a NUL byte in a body that is not
 *   UTF-16 (UTF-16 or UTF-32 text without a mark: JSON readers such as Python's auto-detect it);
 * - a Content-Type with two `charset` parameters, or one naming anything but UTF-8, US-ASCII or
 *   UTF-16 — US-ASCII only when every byte is below 0x80 (browsers read the label as windows-1252),
 *   UTF-16 only when the body starts with a UTF-16 mark (of the same byte order for `utf-16le`/`be`);
 * - a UTF-16 mark on a form (forms are ASCII by construction) or under a UTF-8 or US-ASCII charset;
 * - for XML, a declaration naming another encoding, one disagreeing with the mark (`UTF-16`
 *   declared in a UTF-8 body, `UTF-8` in a UTF-16 one), or one not readable one way.
 * Bytes that are not valid in the encoding are MALFORMED_DATA_SET (400).
 */
export function readBodyText(body: Buffer, kind: BodyKind, contentType: string | undefined): BodyText {
  for (const sig of FOREIGN_SIGNATURES) if (startsWith(body, sig)) throw refused('The body starts with the mark of another encoding');
  const encoding = body.length >= 2 && body[0] === 0xff && body[1] === 0xfe ? 'utf-16le' : body.length >= 2 && body[0] === 0xfe && body[1] === 0xff ? 'utf-16be' : 'utf-8';
  const utf16 = encoding !== 'utf-8';
  if (utf16 && kind === 'FORM') throw refused('The form body is UTF-16');
  if (!utf16 && body.includes(0)) throw refused('The body holds NUL bytes (UTF-16 or UTF-32 without a byte order mark?)');

  const charsets = charsetsOf(contentType);
  if (charsets.length > 1) throw refused('The Content-Type names more than one charset');
  const ascii = (): boolean => !body.some((b) => b >= 0x80);
  const charset = charsets[0];
  if (charset !== undefined) {
    if (UTF8_NAMES.has(charset)) {
      if (utf16) throw refused('The body is UTF-16 but its charset says UTF-8');
    } else if (ASCII_NAMES.has(charset)) {
      if (utf16 || !ascii()) throw refused('The body holds bytes its charset US-ASCII does not have');
    } else if (UTF16_NAMES.has(charset)) {
      if (!utf16 || (charset !== 'utf-16' && charset !== encoding)) throw refused('The charset says UTF-16 but the body has no matching byte order mark');
    } else throw refused(`Charset ${printableType(charset)} is not read`);
  }

  let text: string;
  try {
    text = (encoding === 'utf-16le' ? utf16le : encoding === 'utf-16be' ? utf16be : utf8).decode(body);
  } catch {
    throw new RefusedInputError('MALFORMED_DATA_SET', `The body is not valid ${encoding === 'utf-8' ? 'UTF-8' : 'UTF-16'}`);
  }

  if (kind === 'XML') {
    const declared = declaredEncoding(text);
    if (declared.kind === 'unreadable') throw refused('The XML declaration names an encoding in a form that cannot be read one way');
    if (declared.kind === 'named') {
      const name = declared.name;
      const agrees = utf16
        ? name === 'utf-16' || name === encoding
        : UTF8_NAMES.has(name) || (ASCII_NAMES.has(name) && ascii());
      if (!agrees) throw refused(`The XML declaration names ${printableType(name)}, which is not how the body is encoded`);
    }
  }
  return { text, encoding, encode: encoderFor(encoding) };
}

function encoderFor(encoding: BodyText['encoding']): (text: string) => Buffer {
  if (encoding === 'utf-8') return (text) => Buffer.from(text, 'utf8');
  return (text) => {
    // The mark was consumed by decoding; it is written back so the upstream reads the same way.
    const le = Buffer.from('\ufeff' + text, 'utf16le');
    return encoding === 'utf-16le' ? le : le.swap16();
  };
}
