// HTTP/2 from the app on a connection the proxy reads: TLS whose ALPN chose `h2` (CONNECT
// interception, the transparent listener's TLS interception) or h2c with prior knowledge (the
// transparent listener). The connection is already a plain byte stream (TLS terminated by our own
// TLSSocket), so a never-listening node:http2 server is fed it, as node:http serves HTTP/1.1.
//
// nghttp2 enforces HTTP/2's message rules before a request reaches us (RFC 9113 §8.2-8.3): lower
// case field names, the pseudo-headers present, once and first, none unknown, no connection-specific
// field (Connection, Keep-Alive, Transfer-Encoding, Upgrade, TE other than `trailers`), a
// Content-Length that matches the DATA sent. A stream breaking them is reset before we see it. What
// is left for us is what could make the gateway and the upstream read one request two ways: which
// host it is for, and its scheme (h2-request.ts).

import { createServer, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { DpgError } from '../../core/errors.ts';
import { problemOf, sendProblem } from '../problem.ts';
import { readH2Request } from './h2-request.ts';

/** The largest header list a stream may send (the same order as node:http's 16 KiB head limit, decoded). */
const MAX_HEADER_LIST = 64 * 1024;
/** Streams open at once per connection: what a browser or a gRPC channel opens, with room. */
const MAX_CONCURRENT_STREAMS = 256;

export interface H2FrontHooks {
  /**
   * Serves one request read off an h2 connection. `req` and `res` are node:http2's compatibility
   * objects, typed as node:http's: they carry every member the exchange uses (headers, method, url,
   * complete, the body stream; writeHead, end, destroy, headersSent, writableFinished, 'close').
   * `connection`: the socket the connection arrived on (the TLS socket, or the raw one for h2c).
   */
  readonly onRequest: (req: IncomingMessage, res: ServerResponse, connection: Duplex) => void;
}

export interface H2Front {
  /** Reads an h2 connection (its first bytes still unread, or unshifted). */
  serve(connection: Duplex): void;
}

export function createH2Front(scheme: 'http' | 'https', hooks: H2FrontHooks): H2Front {
  const server = createServer({
    settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, maxHeaderListSize: MAX_HEADER_LIST, enablePush: false },
    maxHeaderListPairs: 512,
    // No 'timeout' here: idle connections are swept by the proxy (connection-limits.ts), as HTTP/1.1 ones.
  });
  const connections = new WeakMap<Http2Session, Duplex>();
  let accepting: Duplex | undefined;
  // node:http2 emits 'session' within emit('connection'): the socket being served is the one just handed over.
  server.on('session', (session) => {
    if (accepting !== undefined) connections.set(session, accepting);
    session.on('error', () => session.destroy());
  });
  server.on('request', (req: Http2ServerRequest, res: Http2ServerResponse) => {
    req.stream.on('error', () => req.stream.destroy());
    const connection = connections.get(req.stream.session as Http2Session);
    if (connection === undefined) {
      req.stream.close();
      return;
    }
    const refusal = readH2Request(req.headers, scheme);
    if (refusal !== undefined) {
      sendProblem(res as unknown as ServerResponse, problemOf(new DpgError('INVALID_REQUEST', refusal)), undefined);
      return;
    }
    requestConnections.set(req, connection);
    hooks.onRequest(req as unknown as IncomingMessage, res as unknown as ServerResponse, connection);
  });
  // No 'checkContinue' listener: node:http2 answers Expect: 100-continue itself; a declared length
  // over a route's limit is then refused (413) before the body is read, by the exchange.
  return {
    serve(connection) {
      accepting = connection;
      try {
        // A TLS socket of ours is done with its handshake here; tls.Server clears this flag for its own
        // sockets before handing them on, and node:http2 waits for a 'secureConnect' while it is set.
        if (connection instanceof TLSSocket) (connection as TLSSocket & { secureConnecting: boolean }).secureConnecting = false;
        server.emit('connection', connection);
      } finally {
        accepting = undefined;
      }
    },
  };
}

/** Requests read off h2 connections → that connection (their own `socket` is a per-stream proxy object). */
const requestConnections = new WeakMap<object, Duplex>();

/**
 * The connection a request arrived on: the socket handed to the HTTP/2 reader for an h2 request
 * (the proxy counts exchanges and closes idle connections by it), `req.socket` for HTTP/1.1.
 */
export function connectionOf(req: IncomingMessage): Duplex {
  return requestConnections.get(req) ?? req.socket;
}

/** True for a request that arrived over HTTP/2 (node:http2's compatibility request). */
export function isH2Request(req: IncomingMessage): boolean {
  return (req as unknown as { httpVersionMajor?: number }).httpVersionMajor === 2;
}
