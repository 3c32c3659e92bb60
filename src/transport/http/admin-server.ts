// The admin listener: GET /metrics, /healthz and /readyz on a port of their own, nothing else. The
// sidecar profile has no HTTP API, and its proxy listener reads an origin-form `/metrics` as a
// request to proxy (400), so Prometheus and probes need this door (like Istio's 15020).
// Only node:http: it starts in every sidecar, whose idle footprint is budgeted.

import { listenOn } from '../../core/listen.ts';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { ListenAddress } from '../../config/types.ts';
import type { RunningServer } from './running-server.ts';

export interface AdminDeps {
  readonly listen: ListenAddress;
  readonly metrics: Metrics;
  /** The gateway's readiness (every door started, the proxy below its connection cap). */
  readonly isReady: () => boolean;
  readonly logger: Logger;
}

const JSON_TYPE = 'application/json; charset=utf-8';
/** Enough for a scrape or probe: a client that keeps more open is not one of ours. */
const MAX_CONNECTIONS = 64;

function send(req: IncomingMessage, res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store', ...headers });
  res.end(req.method === 'HEAD' ? undefined : body);
}

export async function startAdminServer(deps: AdminDeps): Promise<RunningServer> {
  const { metrics, isReady, logger } = deps;
  const server = createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (req, res) => {
    // A body is never read; a request that sends one gets its answer and the connection closed.
    req.resume();
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics' && path !== '/healthz' && path !== '/readyz') {
      send(req, res, 404, JSON_TYPE, '{"status":"not found","paths":["/metrics","/healthz","/readyz"]}');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(req, res, 405, JSON_TYPE, '{"status":"method not allowed"}', { Allow: 'GET, HEAD' });
      return;
    }
    if (path === '/healthz') return send(req, res, 200, JSON_TYPE, '{"status":"ok"}');
    if (path === '/readyz') {
      const ready = isReady();
      return send(req, res, ready ? 200 : 503, JSON_TYPE, ready ? '{"status":"ready"}' : '{"status":"not ready"}');
    }
    metrics.render().then(
      ({ contentType, body }) => send(req, res, 200, contentType, body),
      () => send(req, res, 500, JSON_TYPE, '{"status":"metrics unavailable"}'),
    );
  });
  server.maxConnections = MAX_CONNECTIONS;
  const address = await listenOn(server, deps.listen.host, deps.listen.port);
  logger.info({ listener: 'admin', host: address.host, port: address.port }, 'admin listener (/metrics, /healthz, /readyz) listening');
  return {
    address,
    close(graceMs = 1000): Promise<void> {
      return new Promise<void>((resolve) => {
        // Scrapes and probes are short: a grace of its own, never the API's.
        const timer = setTimeout(() => server.closeAllConnections(), Math.min(graceMs, 1000));
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      });
    },
  };
}
