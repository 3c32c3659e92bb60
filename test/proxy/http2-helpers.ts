// Fixtures for HTTP/2 through the proxy: a recording HTTP/2 upstream (TLS with ALPN, or h2c), and a
// node:http2 client session opened through a CONNECT tunnel with the gateway CA.

import { once } from 'node:events';
import {
  connect as http2Connect,
  createSecureServer,
  createServer as createH2cServer,
  type ClientHttp2Session,
  type Http2Server,
  type Http2SecureServer,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Transform, type TransformCallback } from 'node:stream';
import { credentials, type ChannelCredentials, type Client, type ClientDuplexStream, type StatusObject } from '@grpc/grpc-js';
import { GrpcCallError, type GrpcCall, type GrpcPhase } from '../../src/proxy/grpc-egress/contract.ts';
import { connectTcp, type TestPki } from './helpers.ts';

export interface H2Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface H2Upstream {
  readonly port: number;
  readonly received: H2Received[];
  /** HTTP/2 sessions accepted so far. */
  sessions(): number;
  /** HTTP/1.1 requests served (allowHTTP1 upstreams). */
  http1Requests(): number;
  close(): Promise<void>;
}

/** Answers one stream; default: echo the body with the request's content type, `x-upstream: h2`. */
export type H2Handler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, body: Buffer) => void;

export const h2Echo: H2Handler = (stream, headers, body) => {
  stream.respond({ ':status': 200, 'content-type': headers['content-type'] ?? 'application/octet-stream', 'x-upstream': 'h2' });
  stream.end(body);
};

/**
 * A recording HTTP/2 upstream on 127.0.0.1: TLS when `tls` is given (ALPN h2, and http/1.1 too when
 * `allowHTTP1`), else h2c with prior knowledge. `streaming`: the handler gets the stream at once,
 * before its body (gRPC bidi), and records nothing.
 */
export async function startH2Upstream(options: { tls?: TestPki; allowHTTP1?: boolean; handler?: H2Handler; streaming?: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void } = {}): Promise<H2Upstream> {
  const received: H2Received[] = [];
  let sessions = 0;
  let http1 = 0;
  const sockets = new Set<Socket>();
  const handler = options.handler ?? h2Echo;
  const server: Http2Server | Http2SecureServer = options.tls
    ? createSecureServer({ cert: options.tls.certPem, key: options.tls.keyPem, allowHTTP1: options.allowHTTP1 === true })
    : createH2cServer();
  server.on('session', () => sessions++);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', () => undefined);
    if (options.streaming) return options.streaming(stream, headers);
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ headers, body });
      handler(stream, headers, body);
    });
  });
  if (options.allowHTTP1) {
    server.on('request', (req, res) => {
      if (req.httpVersionMajor !== 1) return;
      http1++;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'text/plain', 'x-upstream': 'h1' });
        res.end(Buffer.concat(chunks));
      });
    });
  }
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    received,
    sessions: () => sessions,
    http1Requests: () => http1,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * An HTTP/2 client session through `CONNECT authority` on the proxy, TLS verified against the
 * gateway CA, offering only the ALPN protocols given (default: h2 alone, as Go's and grpc's clients do).
 */
export async function h2ThroughConnect(proxyPort: number, authority: string, caPem: string, alpn: string[] = ['h2']): Promise<ClientHttp2Session> {
  const tunnel = await connectTcp(proxyPort);
  tunnel.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const [head] = (await once(tunnel, 'data')) as [Buffer];
  if (!head.toString('latin1').startsWith('HTTP/1.1 200')) throw new Error(`CONNECT refused: ${head.toString('latin1').split('\r\n')[0]}`);
  const host = authority.slice(0, authority.lastIndexOf(':'));
  const session = http2Connect(`https://${authority}`, {
    createConnection: () => tlsConnect({ socket: tunnel, host, ca: caPem, servername: host === '127.0.0.1' ? undefined : host, ALPNProtocols: alpn }),
  });
  session.on('error', () => undefined);
  await once(session, 'connect');
  return session;
}

export interface H2Response {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly trailers: IncomingHttpHeaders | undefined;
}

/** One request on a session; rejects with the stream's error (a reset). */
export function h2Request(session: ClientHttp2Session, headers: Record<string, string>, body?: string | Buffer): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let responseHeaders: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders | undefined;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (responseHeaders = h));
    stream.on('trailers', (t) => (trailers = t));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve({ status: Number(responseHeaders[':status']), headers: responseHeaders, body: Buffer.concat(chunks), trailers }));
    stream.on('error', reject);
    stream.on('close', () => {
      if (stream.rstCode !== 0) reject(Object.assign(new Error(`stream reset ${stream.rstCode}`), { rstCode: stream.rstCode }));
    });
    if (body !== undefined) stream.end(body);
  });
}

export const SECRET = 'SECRET-4111';

/** A stand-in GrpcPhase: each whole message has SECRET replaced by `replacement`; a message holding `refuseMarker` is refused. */
export function fakeGrpcPhase(replacement: string, calls: GrpcCall[], refuseMarker = 'FAIL'): GrpcPhase {
  return {
    messages(call) {
      calls.push(call);
      let pending: Buffer = Buffer.alloc(0);
      let index = 0;
      return new Transform({
        transform(chunk: Buffer, _enc, done: TransformCallback) {
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          while (pending.length >= 5) {
            const length = pending.readUInt32BE(1);
            if (pending.length < 5 + length) break;
            const message = pending.subarray(5, 5 + length).toString('latin1');
            pending = pending.subarray(5 + length);
            index++;
            if (message.includes(refuseMarker)) return done(new GrpcCallError(3, `message ${index} could not be protected`));
            const out = Buffer.from(message.split(SECRET).join(replacement), 'latin1');
            const frame = Buffer.alloc(5);
            frame.writeUInt32BE(out.length, 1);
            this.push(Buffer.concat([frame, out]));
          }
          done();
        },
        flush(done) {
          done(pending.length > 0 ? new GrpcCallError(13, 'a truncated message at the end of the call') : undefined);
        },
      });
    },
  };
}


/**
 * Sends each message on a bidi call and waits for its reply before sending the next (so a message
 * held back anywhere would stall the call), then ends the call: the replies and the final status code.
 */
export async function bidiInTurn(call: ClientDuplexStream<Buffer, Buffer>, messages: readonly string[]): Promise<{ replies: string[]; code: number }> {
  const replies: string[] = [];
  for (const message of messages) {
    const reply = new Promise<string>((resolve) => call.once('data', (m: Buffer) => resolve(m.toString('latin1'))));
    call.write(Buffer.from(message, 'latin1'));
    replies.push(await reply);
  }
  const status = new Promise<StatusObject>((resolve) => call.on('status', resolve));
  call.end();
  return { replies, code: (await status).code };
}

/**
 * A grpc-js client of `Ctor` for 127.0.0.1:`port` that reaches it through the forward proxy (grpc-js
 * reads `grpc_proxy` when the channel is made), trusting the gateway CA. The variable is restored after.
 */
export function grpcClientThroughProxy<C extends Client>(
  Ctor: new (address: string, creds: ChannelCredentials) => C,
  port: number,
  proxy: { readonly address: { readonly port: number }; readonly caPem: string },
): C {
  const saved = process.env.grpc_proxy;
  process.env.grpc_proxy = `http://127.0.0.1:${proxy.address.port}`;
  try {
    return new Ctor(`127.0.0.1:${port}`, credentials.createSsl(Buffer.from(proxy.caPem)));
  } finally {
    if (saved === undefined) delete process.env.grpc_proxy;
    else process.env.grpc_proxy = saved;
  }
}
