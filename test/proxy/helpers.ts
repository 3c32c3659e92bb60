// Test fixtures for the proxy: recording upstreams (HTTP and HTTPS with their own test CA), a
// proxy config builder, and a started proxy with the real engine and a captured log.

import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect as netConnect, type AddressInfo, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Duplex } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { ProxyConfig, ProxyRoute } from '../../src/config/types.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { startProxy, type RunningProxy } from '../../src/proxy/index.ts';
import type { ResolveHost } from '../../src/proxy/reading/route-host-addresses.ts';
import { createCertificate, encodeName, issuerIdentity, randomSerial } from '../../src/crypto/x509.ts';
import { testEngine } from '../helpers/engine.ts';

/** A card number that must never reach an upstream in clear when a route protects it. */
export const CARD = '4111111111111111';

export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
}

export interface Upstream {
  readonly port: number;
  readonly origin: string;
  readonly received: Received[];
  /** Every byte that arrived on any connection, before HTTP parsing. */
  rawBytes(): Buffer;
  close(): Promise<void>;
}

/** Handler: default echoes the request body back with the request's content type and encoding. */
export type UpstreamHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

export const echo: UpstreamHandler = (req, res, body) => {
  const headers: Record<string, string> = { 'content-type': req.headers['content-type'] ?? 'application/octet-stream', 'x-upstream': 'yes' };
  if (req.headers['content-encoding']) headers['content-encoding'] = req.headers['content-encoding'];
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
};

export interface TestPki {
  readonly caPem: string;
  readonly caFile: string;
  readonly certPem: string;
  readonly keyPem: string;
}

/**
 * An upstream CA (unrelated to the gateway's) and one server certificate for every name and address
 * given (the first is also its subject); by default localhost and 127.0.0.1.
 */
export function upstreamPki(dir: string, names: readonly string[] = ['localhost', '127.0.0.1']): TestPki {
  const now = Date.now();
  const caKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const caName = encodeName('Upstream Test CA');
  const ca = createCertificate({
    subject: caName,
    publicKey: caKeys.publicKey,
    selfSigningKey: caKeys.privateKey,
    notBefore: new Date(now - 3600_000),
    notAfter: new Date(now + 86400_000),
    isCa: true,
    serial: randomSerial(),
  });
  const leafKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const leaf = createCertificate({
    subject: encodeName(names[0]!),
    publicKey: leafKeys.publicKey,
    issuer: { name: caName, privateKey: caKeys.privateKey, keyIdentifier: issuerIdentity(ca.der).keyIdentifier },
    notBefore: new Date(now - 3600_000),
    notAfter: new Date(now + 86400_000),
    isCa: false,
    altNames: [...names],
    serial: randomSerial(),
  });
  const caFile = join(dir, 'upstream-ca.pem');
  // Readable by the other UIDs of the capture tests' applications.
  writeFileSync(caFile, ca.pem, { mode: 0o644 });
  return { caPem: ca.pem, caFile, certPem: leaf.pem, keyPem: leafKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/**
 * A recording upstream (echo by default) on `host`, or on each of `hosts` at one port (the
 * transparent tests' upstreams answer on several loopback addresses).
 */
export async function startUpstream(options: { tls?: TestPki; handler?: UpstreamHandler; host?: string; hosts?: readonly string[] } = {}): Promise<Upstream> {
  const received: Received[] = [];
  const raw: Buffer[] = [];
  const sockets = new Set<Socket>();
  const handler = options.handler ?? echo;
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  };
  const onSocket = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    // Plain upstreams: the bytes on the wire. TLS upstreams: the decrypted bytes (secureConnection).
    s.on('data', (d: Buffer) => raw.push(d));
  };
  const hosts = options.hosts ?? [options.host ?? '127.0.0.1'];
  const servers: Server[] = [];
  let port = 0;
  for (const host of hosts) {
    const server: Server = options.tls
      ? createHttpsServer({ cert: options.tls.certPem, key: options.tls.keyPem }, onRequest)
      : createHttpServer(onRequest);
    server.on(options.tls ? 'secureConnection' : 'connection', onSocket);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    servers.push(server);
  }
  const first = hosts[0]!;
  return {
    port,
    origin: `${options.tls ? 'https' : 'http'}://${first.includes(':') ? `[${first}]` : first}:${port}`,
    received,
    rawBytes: () => Buffer.concat(raw),
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    },
  };
}

export function route(name: string, fields: Partial<ProxyRoute> & Pick<ProxyRoute, 'match'>): ProxyRoute {
  return { name, onError: 'reject', maxBodyBytes: 64 * 1024, ...fields };
}

export function proxyConfig(overrides: Partial<ProxyConfig> = {}): ProxyConfig {
  return {
    enabled: true,
    listen: { host: '127.0.0.1', port: 0 },
    connectTimeoutMs: 1000,
    responseTimeoutMs: 2000,
    routes: [],
    reverse: [],
    ...overrides,
  };
}

export interface TestProxy {
  readonly proxy: RunningProxy;
  readonly url: string;
  readonly metrics: Metrics;
  /** Every log line written so far. */
  logText(): string;
  close(): Promise<void>;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'dpg-proxy-'));
}

export async function startTestProxy(config: ProxyConfig, dataDir = tempDir(), resolveHost?: ResolveHost): Promise<TestProxy> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString('utf8'));
      cb();
    },
  });
  const logger = createLogger({ level: 'info', destination });
  const metrics = new Metrics({ collectDefaults: false });
  const proxy = await startProxy({ config, dataDir, engine: testEngine(), logger, metrics, ...(resolveHost ? { resolveHost } : {}) });
  return {
    proxy,
    url: `http://127.0.0.1:${proxy.address.port}`,
    metrics,
    logText: () => lines.join(''),
    close: () => proxy.close(500),
  };
}

/** An HTTP/1.1 response read off a raw socket. */
export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** Everything received, head included. */
  readonly raw: Buffer;
}

/** Parses one complete response from `data`; undefined while incomplete. `closed`: the peer ended. */
function parseResponse(data: Buffer, closed: boolean): RawResponse | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const lines = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(lines[0].split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = data.subarray(end + 4);
  if (status === 204 || status === 304 || (status >= 100 && status < 200)) return { status, headers, body: Buffer.alloc(0), raw: data };
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    const chunks: Buffer[] = [];
    let at = 0;
    for (;;) {
      const eol = rest.indexOf('\r\n', at);
      if (eol === -1) return undefined;
      const size = parseInt(rest.subarray(at, eol).toString('latin1'), 16);
      if (size === 0) return { status, headers, body: Buffer.concat(chunks), raw: data };
      if (rest.length < eol + 2 + size + 2) return undefined;
      chunks.push(rest.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
  }
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    return rest.length >= length ? { status, headers, body: rest.subarray(0, length), raw: data } : undefined;
  }
  return closed ? { status, headers, body: rest, raw: data } : undefined;
}

/**
 * Writes raw request bytes on an open connection and reads one response. Rejects when the
 * connection closes without a response (`status: 0` is never returned).
 */
export function exchangeRaw(socket: Duplex, request: string | Buffer, ms = 3000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0);
    const finish = (closed: boolean): void => {
      const response = parseResponse(data, closed);
      if (response === undefined && !closed) return;
      clearTimeout(timer);
      socket.off('data', onData);
      if (response) resolve(response);
      else reject(new Error(`connection closed without a response (${data.length} bytes)`));
    };
    const onData = (d: Buffer): void => {
      data = Buffer.concat([data, d]);
      finish(false);
    };
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete response within ${ms} ms: ${JSON.stringify(data.toString('latin1').slice(0, 200))}`));
    }, ms);
    socket.on('data', onData);
    socket.once('close', () => finish(true));
    socket.on('error', () => undefined);
    socket.write(request);
  });
}

export function connectTcp(port: number, host = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = netConnect(port, host, () => resolve(s));
    s.once('error', reject);
  });
}

/** Writes raw bytes on a new connection to `port` and reads everything until the connection closes (a response cut short included). */
export async function readUntilClosed(port: number, request: string | Buffer): Promise<Buffer> {
  const socket = await connectTcp(port);
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.on('error', () => undefined);
  const closed = new Promise((r) => socket.once('close', r));
  socket.write(request);
  await closed;
  return Buffer.concat(chunks);
}

/** Sends raw bytes on a new connection to `port` and reads one response; the connection is closed after. */
export async function sendRaw(port: number, request: string | Buffer): Promise<RawResponse> {
  const s = await connectTcp(port);
  try {
    return await exchangeRaw(s, request);
  } finally {
    s.destroy();
  }
}

/**
 * `CONNECT authority` through the proxy; resolves with the tunnel once 200 arrived (TLS on top
 * when `tls` is given, verifying the gateway CA), or rejects with the refusal's status line.
 */
export async function openTunnel(proxyPort: number, authority: string, tls?: { ca: string; servername?: string }): Promise<Duplex> {
  const s = await connectTcp(proxyPort);
  const head = await new Promise<string>((resolve, reject) => {
    let text = '';
    const onData = (d: Buffer): void => {
      text += d.toString('latin1');
      if (!text.includes('\r\n\r\n')) return;
      s.off('data', onData);
      resolve(text);
    };
    s.on('data', onData);
    s.once('close', () => reject(new Error(`tunnel closed: ${text.split('\r\n')[0]}`)));
    s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  });
  if (!/^HTTP\/1\.1 200 /.test(head)) {
    s.destroy();
    throw Object.assign(new Error(`CONNECT refused: ${head.split('\r\n')[0]}`), { response: head });
  }
  if (!tls) return s;
  const t = tlsConnect({ socket: s, ca: tls.ca, ...(tls.servername ? { servername: tls.servername } : {}), checkServerIdentity: () => undefined });
  await new Promise<void>((resolve, reject) => t.once('secureConnect', resolve).once('error', reject));
  return t;
}

/** A request head plus body, with Content-Length; `contentType` undefined sends none. */
export function rawPost(target: string, host: string, body: string | Buffer, contentType: string | undefined = 'application/json', method = 'POST'): Buffer {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const ct = contentType === undefined ? '' : `Content-Type: ${contentType}\r\n`;
  return Buffer.concat([Buffer.from(`${method} ${target} HTTP/1.1\r\nHost: ${host}\r\n${ct}Content-Length: ${b.length}\r\n\r\n`, 'latin1'), b]);
}

/** What the Flask upstream recorded of one request that reached a view. */
export interface FlaskRecord {
  readonly path: string;
  /** The view Flask routed it to: `customers` (POST /v1/customers/**) or `other`. */
  readonly endpoint: string | null;
  /** The card was in the body or the query string, in clear. */
  readonly clear: boolean;
}

export interface FlaskUpstream {
  readonly port: number;
  /** Every request that reached a view so far (asked directly, not through the proxy). */
  records(): Promise<FlaskRecord[]>;
  close(): void;
}

/**
 * A real Flask app on werkzeug's server (fixtures/flask_upstream.py), the lenient reader of the
 * differential tests; undefined when python3 with Flask is not installed (the caller says so).
 */
export async function startFlaskUpstream(): Promise<FlaskUpstream | undefined> {
  if (spawnSync('python3', ['-c', 'import flask'], { stdio: 'ignore' }).status !== 0) return undefined;
  const script = fileURLToPath(new URL('./fixtures/flask_upstream.py', import.meta.url));
  const child = spawn('python3', [script, CARD], { stdio: ['ignore', 'pipe', 'ignore'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const port = Number(line.toString().trim());
  return {
    port,
    records: async () => (await (await fetch(`http://127.0.0.1:${port}/__received`)).json()) as FlaskRecord[],
    close: () => child.kill(),
  };
}

export const FLASK_MISSING = 'python3 with Flask is not installed (apt-get install python3-flask)';
