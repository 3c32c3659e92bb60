// Operations endpoints: liveness, readiness, Prometheus metrics and the proxy CA certificate.

import type { Exchange, HttpDeps } from './exchange.ts';

function send(ex: Exchange, status: number, contentType: string, body: string, cache = 'no-store'): void {
  ex.res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': cache,
    'X-Request-Id': ex.requestId,
  });
  ex.res.end(body);
}

export function handleHealthz(_deps: HttpDeps, ex: Exchange): void {
  send(ex, 200, 'application/json; charset=utf-8', '{"status":"ok"}');
}

export function handleReadyz(deps: HttpDeps, ex: Exchange): void {
  const ready = deps.isReady();
  send(ex, ready ? 200 : 503, 'application/json; charset=utf-8', ready ? '{"status":"ready"}' : '{"status":"starting"}');
}

export async function handleMetrics(deps: HttpDeps, ex: Exchange): Promise<void> {
  const { contentType, body } = await deps.metrics.render();
  send(ex, 200, contentType, body);
}

/** Returns false when there is no CA, so the router answers 404. */
export function handleProxyCa(deps: HttpDeps, ex: Exchange): boolean {
  const pem = deps.proxyCaPem?.();
  if (pem === undefined || pem === '') return false;
  ex.res.setHeader('Content-Disposition', 'attachment; filename="dpg-proxy-ca.pem"');
  send(ex, 200, 'application/x-pem-file', pem, 'public, max-age=300');
  return true;
}
