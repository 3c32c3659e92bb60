// Just enough ASN.1 DER to write X.509 certificates and read the few fields we need back from a
// configured CA certificate (its subject name and key identifier). Definite lengths only.

export type Der = Uint8Array;

function lengthBytes(length: number): number[] {
  if (length < 0x80) return [length];
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return [0x80 | bytes.length, ...bytes];
}

/** One tag-length-value element. */
export function tlv(tag: number, content: Uint8Array): Der {
  const len = lengthBytes(content.length);
  const out = new Uint8Array(1 + len.length + content.length);
  out[0] = tag;
  out.set(len, 1);
  out.set(content, 1 + len.length);
  return out;
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export const sequence = (...items: Der[]): Der => tlv(0x30, concat(items));
export const set = (...items: Der[]): Der => tlv(0x31, concat(items));
export const octetString = (bytes: Uint8Array): Der => tlv(0x04, bytes);
export const nullValue = (): Der => tlv(0x05, new Uint8Array(0));
export const boolean = (value: boolean): Der => tlv(0x01, Uint8Array.of(value ? 0xff : 0x00));
export const utf8String = (text: string): Der => tlv(0x0c, new TextEncoder().encode(text));
/** Context-specific constructed tag [n] EXPLICIT. */
export const explicit = (n: number, inner: Der): Der => tlv(0xa0 | n, inner);
/** Context-specific primitive tag [n] IMPLICIT (GeneralName dNSName, iPAddress, keyIdentifier). */
export const implicitPrimitive = (n: number, content: Uint8Array): Der => tlv(0x80 | n, content);

/** BIT STRING with no unused bits. */
export function bitString(bytes: Uint8Array): Der {
  return tlv(0x03, concat([Uint8Array.of(0), bytes]));
}

/** BIT STRING of named bits (KeyUsage): bit 0 is the most significant bit of the first byte. */
export function namedBits(bits: readonly number[]): Der {
  const max = Math.max(...bits);
  const bytes = new Uint8Array(Math.floor(max / 8) + 1);
  for (const b of bits) bytes[Math.floor(b / 8)] |= 0x80 >> b % 8;
  // DER: trailing zero bits of the last byte are unused and must be declared as such.
  const last = bytes[bytes.length - 1];
  let unused = 0;
  while (unused < 7 && (last & (1 << unused)) === 0) unused++;
  return tlv(0x03, concat([Uint8Array.of(unused), bytes]));
}

/** Non-negative INTEGER from big-endian magnitude bytes. */
export function unsignedInteger(magnitude: Uint8Array): Der {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const trimmed = magnitude.subarray(start);
  return tlv(0x02, trimmed[0] & 0x80 ? concat([Uint8Array.of(0), trimmed]) : trimmed);
}

export function smallInteger(n: number): Der {
  const bytes: number[] = [];
  let v = n;
  do {
    bytes.unshift(v & 0xff);
    v = Math.floor(v / 256);
  } while (v > 0);
  return unsignedInteger(Uint8Array.from(bytes));
}

export function oid(dotted: string): Der {
  const parts = dotted.split('.').map(Number);
  const bytes: number[] = [parts[0] * 40 + parts[1]];
  for (const arc of parts.slice(2)) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Uint8Array.from(bytes));
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 §4.1.2.5). */
export function time(date: Date): Der {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '');
  const year = date.getUTCFullYear();
  return year < 2050
    ? tlv(0x17, new TextEncoder().encode(`${digits.slice(2)}Z`))
    : tlv(0x18, new TextEncoder().encode(`${digits}Z`));
}

/** One parsed element: its tag, the whole encoding and the content. */
export interface DerElement {
  readonly tag: number;
  readonly whole: Uint8Array;
  readonly content: Uint8Array;
}

/** Reads the element starting at `offset`. Throws on truncated or indefinite-length input. */
export function readElement(bytes: Uint8Array, offset = 0): DerElement {
  if (offset + 2 > bytes.length) throw new Error('DER: truncated element');
  const tag = bytes[offset];
  let length = bytes[offset + 1];
  let header = 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4) throw new Error('DER: unsupported length');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + bytes[offset + 2 + i];
    header += count;
  }
  const end = offset + header + length;
  if (end > bytes.length) throw new Error('DER: truncated element');
  return { tag, whole: bytes.subarray(offset, end), content: bytes.subarray(offset + header, end) };
}

/** The elements inside a constructed element's content. */
export function children(content: Uint8Array): DerElement[] {
  const out: DerElement[] = [];
  for (let at = 0; at < content.length; ) {
    const el = readElement(content, at);
    out.push(el);
    at += el.whole.length;
  }
  return out;
}
