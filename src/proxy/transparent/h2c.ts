// HTTP/2 with prior knowledge (h2c) to an address no route names: which host is each stream for?
// (h2c to a routed address is read whole instead, http2/h2-front.ts.) This connection's frames go
// upstream as they come, so it cannot turn into one the gateway reads: a stream for a routed host
// — or one naming no host — resets the connection before a byte of it reaches the upstream; frames
// of streams for unrouted hosts pass untouched. Every stream is read, not only the first.
//
// The header blocks are HPACK-compressed with a table that lives as long as the connection, so
// they are read by Node's own HTTP/2 implementation: a server session fed a copy of every byte the
// app sends, whose own output (SETTINGS, WINDOW_UPDATE …) is dropped — the app talks to the
// upstream, not to it. The app's bytes are cut into frames here (9-byte frame headers only): frames
// go upstream as they came, up to a HEADERS frame that opens a new stream, which waits (with all
// after it) until the session has decoded that stream's headers and the route table has spoken.
// If the session fails (a frame sequence only the upstream understands), no later stream can be
// read: the next one is refused. A new stream is a HEADERS frame with a stream id above every id
// seen so far: RFC 9113 §5.1.1 makes a lower one a connection error, which every common server
// (nghttp2, Go, Node, Envoy, netty) enforces, so it cannot open a stream past this gate.

import { createServer, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

export interface H2cHooks {
  /** A refusal reason for a stream naming `authority` (its :authority, else its Host); undefined: it may pass. */
  readonly decide: (authority: string | undefined) => string | undefined;
  readonly refuse: (client: Socket, reason: string) => void;
}

const PREFACE_LENGTH = 24;
const FRAME_HEADER = 9;
const HEADERS = 0x1;
/** Frames are waited for whole; bigger ones than an upstream may allow (2^24 − 1) are not HTTP/2. */
const MAX_QUEUED = 16 * 1024 * 1024 + FRAME_HEADER;

export function relayH2c(client: Socket, upstream: Socket, first: Buffer, hooks: H2cHooks): void {
  let queue: Buffer = Buffer.alloc(0);
  let prefaceSent = false;
  let highestStream = 0;
  /** The new stream whose headers the queue waits on. */
  let waiting: number | undefined;
  let broken: string | undefined;
  let done = false;
  let clientEnded = false;
  const authorities = new Map<number, string | undefined>();

  const reader = new Duplex({
    read() {},
    write(_chunk, _encoding, callback) {
      callback(); // the session's own frames: the app never sees them
    },
  });
  const server = createServer({ settings: { maxConcurrentStreams: 2 ** 32 - 1, maxHeaderListSize: 2 ** 24 }, maxSessionMemory: 64, maxHeaderListPairs: 4096 });
  server.on('session', (session) => {
    session.on('error', () => undefined);
    session.on('close', () => fail('the HTTP/2 stream headers could not be read'));
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', () => undefined);
    const authority = headers[':authority'] ?? headers.host;
    authorities.set(stream.id ?? 0, typeof authority === 'string' ? authority : undefined);
    // Its body is the upstream's business: drained so the session's windows stay open.
    stream.resume();
    stream.respond({ ':status': 200 }, { endStream: true });
    advance();
  });
  server.emit('connection', reader);

  const refuse = (reason: string): void => {
    if (done) return;
    done = true;
    reader.destroy();
    hooks.refuse(client, reason);
  };
  const fail = (reason: string): void => {
    broken ??= reason;
    if (waiting !== undefined) refuse(broken);
  };

  const send = (bytes: Buffer): void => {
    if (bytes.length === 0) return;
    if (!upstream.write(bytes)) {
      client.pause();
      upstream.once('drain', () => client.resume());
    }
  };

  /** Forwards whole frames up to the next new stream, and decides that stream once it is read. */
  const advance = (): void => {
    while (!done) {
      if (waiting !== undefined) {
        if (!authorities.has(waiting)) return;
        const reason = hooks.decide(authorities.get(waiting));
        authorities.delete(waiting);
        if (reason !== undefined) return refuse(reason);
        waiting = undefined;
      }
      let at = 0;
      if (!prefaceSent) {
        if (queue.length < PREFACE_LENGTH) return;
        at = PREFACE_LENGTH;
        prefaceSent = true;
      }
      while (queue.length - at >= FRAME_HEADER) {
        const length = queue.readUIntBE(at, 3);
        const type = queue[at + 3];
        const stream = queue.readUInt32BE(at + 5) & 0x7fffffff;
        if (type === HEADERS && stream > highestStream) {
          highestStream = stream;
          waiting = stream;
          break;
        }
        if (queue.length - at < FRAME_HEADER + length) break;
        at += FRAME_HEADER + length;
      }
      send(queue.subarray(0, at));
      queue = queue.subarray(at);
      if (waiting === undefined) {
        // The app half-closed while a stream was held: its FIN follows what was held.
        if (clientEnded && queue.length === 0) upstream.end();
        return;
      }
      if (broken !== undefined) return refuse(broken);
    }
  };

  const onClientData = (chunk: Buffer): void => {
    queue = queue.length === 0 ? chunk : Buffer.concat([queue, chunk]);
    if (queue.length > MAX_QUEUED) return refuse('an HTTP/2 frame too large to read');
    reader.push(chunk);
    advance();
  };

  client.on('data', onClientData);
  client.on('end', () => {
    clientEnded = true;
    if (!done && waiting === undefined) upstream.end();
  });
  client.on('error', () => {
    if (!upstream.destroyed) upstream.resetAndDestroy();
  });
  client.on('close', () => {
    reader.destroy();
    if (!upstream.destroyed) upstream.destroy();
  });
  upstream.pipe(client);
  upstream.on('error', () => undefined);
  upstream.on('close', (hadError) => {
    reader.destroy();
    if (hadError) {
      if (!client.destroyed) client.resetAndDestroy();
    } else if (!client.destroyed) {
      client.once('finish', () => client.destroy());
      client.end();
    }
  });
  upstream.on('timeout', () => {
    client.resetAndDestroy();
    upstream.destroy();
  });
  onClientData(first);
  client.resume();
}
