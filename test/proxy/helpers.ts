// Test fixtures for the proxy: recording upstreams (HTTP and HTTPS with their own test CA), a
// proxy config builder, and a started proxy with the real engine and a captured log.

import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { ProxyConfig, ProxyRoute } from '../../src/config/types.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { randomSerial } from '../../src/proxy/ca.ts';
import { startProxy, type RunningProxy } from '../../src/proxy/index.ts';
import { createCertificate, encodeName, issuerIdentity } from '../../src/proxy/x509.ts';
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

/** An upstream CA (unrelated to the gateway's) and a server certificate for 127.0.0.1 and localhost. */
export function upstreamPki(dir: string): TestPki {
  const caKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const caName = encodeName('Upstream Test CA');
  const now = Date.now();
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
    subject: encodeName('upstream.test'),
    publicKey: leafKeys.publicKey,
    issuer: { name: caName, privateKey: caKeys.privateKey, keyIdentifier: issuerIdentity(ca.der).keyIdentifier },
    notBefore: new Date(now - 3600_000),
    notAfter: new Date(now + 86400_000),
    isCa: false,
    altNames: ['localhost', '127.0.0.1'],
    serial: randomSerial(),
  });
  const caFile = join(dir, 'upstream-ca.pem');
  writeFileSync(caFile, ca.pem);
  return { caPem: ca.pem, caFile, certPem: leaf.pem, keyPem: leafKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

export async function startUpstream(options: { tls?: TestPki; handler?: UpstreamHandler } = {}): Promise<Upstream> {
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
  const server: Server = options.tls
    ? createHttpsServer({ cert: options.tls.certPem, key: options.tls.keyPem }, onRequest)
    : createHttpServer(onRequest);
  const onSocket = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    // Plain upstreams: the bytes on the wire. TLS upstreams: the decrypted bytes (secureConnection).
    s.on('data', (d: Buffer) => raw.push(d));
  };
  if (options.tls) server.on('secureConnection', onSocket);
  else server.on('connection', onSocket);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    received,
    rawBytes: () => Buffer.concat(raw),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
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

export async function startTestProxy(config: ProxyConfig, dataDir = tempDir()): Promise<TestProxy> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString('utf8'));
      cb();
    },
  });
  const logger = createLogger({ level: 'info', destination });
  const metrics = new Metrics({ collectDefaults: false });
  const proxy = await startProxy({ config, dataDir, engine: testEngine(), logger, metrics });
  return {
    proxy,
    url: `http://127.0.0.1:${proxy.address.port}`,
    metrics,
    logText: () => lines.join(''),
    close: () => proxy.close(500),
  };
}
