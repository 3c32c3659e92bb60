// `dpg webhook`: the HTTPS server the API server calls. POST /mutate and /validate take an
// AdmissionReview; GET /healthz, /readyz and /metrics are for the kubelet and Prometheus. It needs
// no Kubernetes API access and no state: any replica answers any review the same way.

import { listenOn } from '../core/listen.ts';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from '../core/logger.ts';
import { decide, type AdmissionKind, type AdmissionSettings } from './admission.ts';
import { readTlsPair, watchTlsPair, type TlsPair } from './tls-files.ts';

export interface WebhookOptions extends AdmissionSettings {
  readonly host?: string;
  readonly port: number;
  readonly certFile: string;
  readonly keyFile: string;
  /** How often the TLS files are re-read. Default 10 s. */
  readonly tlsReloadMs?: number;
  /** Largest AdmissionReview accepted. Default 8 MiB (the API server's objects are at most ~3 MiB). */
  readonly maxBodyBytes?: number;
  readonly logger: Logger;
}

export interface WebhookServer {
  readonly address: { host: string; port: number };
  readonly registry: Registry;
  close(): Promise<void>;
}

class Metrics {
  readonly registry = new Registry();
  readonly reviews = new Counter({ name: 'dpg_webhook_reviews_total', help: 'AdmissionReviews answered, by path and outcome', labelNames: ['path', 'outcome'] as const, registers: [this.registry] });
  readonly latency = new Histogram({
    name: 'dpg_webhook_review_seconds',
    help: 'Time to answer one AdmissionReview',
    labelNames: ['path'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly tlsReloads = new Counter({ name: 'dpg_webhook_tls_reloads_total', help: 'Serving certificate reloads, by result', labelNames: ['result'] as const, registers: [this.registry] });
  readonly certExpiry = new Gauge({ name: 'dpg_webhook_certificate_expiry_timestamp_seconds', help: 'notAfter of the serving certificate in use', registers: [this.registry] });
  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'dpg_webhook_' });
  }
}

const PATHS: Record<string, AdmissionKind> = { '/mutate': 'mutate', '/validate': 'validate' };

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      resolve('too-large');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startWebhook(options: WebhookOptions): Promise<WebhookServer> {
  const { logger } = options;
  const metrics = new Metrics();
  const limit = options.maxBodyBytes ?? 8 * 1024 * 1024;
  let pair: TlsPair = readTlsPair(options.certFile, options.keyFile);
  metrics.certExpiry.set(pair.notAfter.getTime() / 1000);

  const server: Server = createServer({ cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2' }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'webhook request failed');
      if (!res.headersSent) send(res, 500, 'text/plain', 'internal error\n');
      else res.destroy();
    });
  });
  server.requestTimeout = 15_000;
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 60_000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && (path === '/healthz' || path === '/readyz')) return send(res, 200, 'text/plain', 'ok\n');
    if (req.method === 'GET' && path === '/metrics') return send(res, 200, metrics.registry.contentType, await metrics.registry.metrics());
    const kind = PATHS[path];
    if (!kind) return send(res, 404, 'text/plain', 'not found\n');
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return send(res, 405, 'text/plain', 'method not allowed\n');
    }
    const started = process.hrtime.bigint();
    const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (type !== 'application/json') {
      req.resume();
      metrics.reviews.inc({ path, outcome: 'bad-content-type' });
      return send(res, 415, 'text/plain', 'content type must be application/json\n');
    }
    const body = await readBody(req, limit);
    if (body === 'too-large') {
      metrics.reviews.inc({ path, outcome: 'too-large' });
      return send(res, 413, 'text/plain', 'AdmissionReview too large\n');
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      metrics.reviews.inc({ path, outcome: 'malformed' });
      return send(res, 400, 'text/plain', 'body is not JSON\n');
    }
    const answer = decide(parsed, kind, options);
    if (!answer.ok) {
      metrics.reviews.inc({ path, outcome: 'malformed' });
      return send(res, 400, 'text/plain', `${answer.error}\n`);
    }
    metrics.reviews.inc({ path, outcome: answer.outcome });
    metrics.latency.observe({ path }, Number(process.hrtime.bigint() - started) / 1e9);
    logger.info({ path, outcome: answer.outcome, namespace: answer.namespace, pod: answer.pod, dryRun: answer.dryRun }, 'admission review');
    send(res, 200, 'application/json', JSON.stringify(answer.review));
  }

  const watcher = watchTlsPair(
    options.certFile,
    options.keyFile,
    pair,
    options.tlsReloadMs ?? 10_000,
    (next) => {
      server.setSecureContext({ cert: next.cert, key: next.key });
      pair = next;
      metrics.certExpiry.set(next.notAfter.getTime() / 1000);
      metrics.tlsReloads.inc({ result: 'ok' });
      logger.info({ notAfter: next.notAfter.toISOString() }, 'serving certificate reloaded');
    },
    (err) => {
      metrics.tlsReloads.inc({ result: 'error' });
      logger.warn({ problem: err.message }, 'serving certificate files changed but are not usable; keeping the previous one');
    },
  );

  const address = await listenOn(server, options.host, options.port);
  logger.info({ listen: `${address.host}:${address.port}`, notAfter: pair.notAfter.toISOString() }, 'sidecar injector webhook listening');

  return {
    address,
    registry: metrics.registry,
    close: () =>
      new Promise<void>((resolve) => {
        watcher.close();
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
