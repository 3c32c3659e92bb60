// Reads the server name a TLS client asks for from its first flight, without consuming it: the
// bytes are replayed untouched to the upstream (splice) or to our TLS server (interception).
// Strict on purpose: a ClientHello we cannot read the way a server would is refused, never guessed.

/** Longest handshake message we collect (post-quantum key shares make hellos a few KB, not 64). */
const MAX_HELLO_BYTES = 64 * 1024;
const RECORD_HANDSHAKE = 22;
const HANDSHAKE_CLIENT_HELLO = 1;
const EXT_SERVER_NAME = 0;
/** encrypted_client_hello (RFC 9849): the real server name travels encrypted. */
const EXT_ENCRYPTED_CLIENT_HELLO = 0xfe0d;

export type HelloResult =
  | { readonly kind: 'need-more' }
  | { readonly kind: 'hello'; readonly serverName: string | undefined; readonly encryptedClientHello: boolean }
  | { readonly kind: 'invalid'; readonly reason: string };

const NEED_MORE: HelloResult = { kind: 'need-more' };
const invalid = (reason: string): HelloResult => ({ kind: 'invalid', reason });

/** True when `first` starts a TLS handshake record (what every TLS client sends first). */
export function isTlsHandshake(first: Buffer): boolean {
  return first.length > 0 && first[0] === RECORD_HANDSHAKE;
}

/**
 * Parses the ClientHello at the start of `data` (TLS records of type handshake, the message
 * possibly split across several records). `need-more` until the whole message has arrived.
 */
export function parseClientHello(data: Buffer): HelloResult {
  // Reassemble the handshake message from the record fragments.
  const fragments: Buffer[] = [];
  let collected = 0;
  let needed = -1;
  let offset = 0;
  while (needed === -1 || collected < needed) {
    if (data.length < offset + 5) return NEED_MORE;
    if (data[offset] !== RECORD_HANDSHAKE) return invalid('a record other than handshake before the ClientHello ended');
    if (data[offset + 1] !== 3) return invalid('not a TLS record version');
    const length = data.readUInt16BE(offset + 3);
    if (length === 0 || length > 16384 + 2048) return invalid('bad record length');
    if (data.length < offset + 5 + length) return NEED_MORE;
    fragments.push(data.subarray(offset + 5, offset + 5 + length));
    collected += length;
    offset += 5 + length;
    if (needed === -1 && collected >= 4) {
      const head = fragments.length === 1 ? fragments[0] : Buffer.concat(fragments);
      if (head[0] !== HANDSHAKE_CLIENT_HELLO) return invalid('the first handshake message is not a ClientHello');
      needed = 4 + head.readUIntBE(1, 3);
      if (needed > MAX_HELLO_BYTES) return invalid('ClientHello too large');
    }
  }
  const message = fragments.length === 1 ? fragments[0] : Buffer.concat(fragments);
  return readHello(message.subarray(4, needed));
}

function readHello(body: Buffer): HelloResult {
  const r = new Reader(body);
  r.skip(2 + 32); // legacy_version, random
  r.skip(r.u8()); // legacy_session_id
  const suites = r.u16();
  if (suites === 0 || suites % 2 !== 0) return invalid('bad cipher_suites');
  r.skip(suites);
  const compression = r.u8();
  if (compression === 0) return invalid('bad compression_methods');
  r.skip(compression);
  if (r.failed) return invalid('truncated ClientHello');
  if (r.remaining === 0) return { kind: 'hello', serverName: undefined, encryptedClientHello: false }; // no extensions
  const extensionsEnd = r.u16();
  if (r.failed || extensionsEnd !== r.remaining) return invalid('extensions do not fill the ClientHello');
  const seen = new Set<number>();
  let serverName: string | undefined;
  let ech = false;
  while (r.remaining > 0) {
    const type = r.u16();
    const length = r.u16();
    const ext = r.bytes(length);
    if (r.failed) return invalid('truncated extension');
    // RFC 8446 §4.2: one extension of each type. Two server_name extensions would let the gateway
    // and the server read different names.
    if (seen.has(type)) return invalid('duplicate extension');
    seen.add(type);
    if (type === EXT_ENCRYPTED_CLIENT_HELLO) ech = true;
    if (type !== EXT_SERVER_NAME) continue;
    const name = readServerName(ext);
    if (typeof name !== 'string') return name;
    serverName = name;
  }
  return { kind: 'hello', serverName, encryptedClientHello: ech };
}

/** The host_name of a server_name extension (RFC 6066 §3): exactly one, a DNS name. */
function readServerName(ext: Buffer): string | HelloResult {
  const r = new Reader(ext);
  const listLength = r.u16();
  if (r.failed || listLength !== r.remaining || listLength === 0) return invalid('bad server_name list');
  let name: string | undefined;
  while (r.remaining > 0) {
    const type = r.u8();
    const bytes = r.bytes(r.u16());
    if (r.failed) return invalid('truncated server_name');
    if (type !== 0) return invalid('unknown server_name type');
    if (name !== undefined) return invalid('two host names in server_name');
    const text = bytes.toString('latin1');
    if (bytes.length === 0 || bytes.length > 255 || !/^[A-Za-z0-9._-]+$/.test(text)) return invalid('server_name is not a DNS name');
    name = text.toLowerCase();
  }
  return name as string;
}

/** Bounds-checked big-endian reads; a read past the end sets `failed` instead of throwing. */
class Reader {
  private offset = 0;
  failed = false;

  constructor(private readonly buf: Buffer) {}

  get remaining(): number {
    return this.failed ? 0 : this.buf.length - this.offset;
  }

  private take(n: number): number {
    if (this.failed || this.offset + n > this.buf.length) {
      this.failed = true;
      return -1;
    }
    const at = this.offset;
    this.offset += n;
    return at;
  }

  u8(): number {
    const at = this.take(1);
    return at === -1 ? 0 : this.buf[at];
  }

  u16(): number {
    const at = this.take(2);
    return at === -1 ? 0 : this.buf.readUInt16BE(at);
  }

  skip(n: number): void {
    this.take(n);
  }

  bytes(n: number): Buffer {
    const at = this.take(n);
    return at === -1 ? Buffer.alloc(0) : this.buf.subarray(at, at + n);
  }
}
