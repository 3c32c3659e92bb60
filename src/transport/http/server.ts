// The HTTP listener: a small explicit route table on node:http, one audit line and metrics per
// protection request, problem+json errors, and a graceful close.

import { listenOn } from '../../core/listen.ts';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { audit } from '../../core/audit.ts';
import { toDpgError, type DpgError } from '../../core/errors.ts';
import { admitRequest } from '../../core/admit-request.ts';
import { overloadedError } from '../../core/overload.ts';
import type { Door } from '../../core/metrics.ts';
import type { ProtectSummary } from '../../core/types.ts';
import { BEARER_CHALLENGE } from './authenticate.ts';
import type { Exchange, HttpDeps } from './exchange.ts';
import { handleFileProtect } from './file-protect-route.ts';
import { handleJwks, handleToken, JWKS_PATH, TOKEN_PATH } from './identity-routes.ts';
import { handleHealthz, handleMetrics, handleProxyCa, handleReadyz } from './operations-routes.ts';
import { handleOpenApi } from './openapi-route.ts';
import { problemFromError, routeProblem, sendProblem } from './problem.ts';
import { handleProtect } from './protect-route.ts';
import { clientRequestIdFrom } from './request-id.ts';
import type { RunningServer } from './running-server.ts';

export type { HttpDeps } from './exchange.ts';
export type { RunningServer } from './running-server.ts';

/** Upper bound for one request, uploads included (a 2 GiB file over a slow link takes a while). */
const REQUEST_TIMEOUT_MS = 60 * 60 * 1000;

type Handler = (deps: HttpDeps, ex: Exchange) => Promise<void>;

const protection = (door: Door, run: (deps: HttpDeps, ex: Exchange) => Promise<ProtectSummary>): Handler =>
  async (deps, ex) => {
    let outcome = 'ok';
    let summary: ProtectSummary | undefined;
    try {
      summary = await run(deps, ex);
    } catch (err) {
      const error = toDpgError(err);
      outcome = error.code;
      reportFailure(deps, ex, error);
    } finally {
      const seconds = (performance.now() - ex.startedAt) / 1000;
      audit(deps.logger, {
        door,
        requestId: ex.requestId,
        ...ex.audit,
        outcome,
        valuesProtected: summary?.protected,
        valuesFailed: summary?.failed,
        durationMs: Math.round(seconds * 1e4) / 10,
      });
      deps.metrics.observeRequest({ door, jobType: ex.audit.jobType ?? 'none', outcome, seconds, valuesProtected: summary?.protected ?? 0 });
    }
  };

const routes: Readonly<Record<string, Readonly<Record<string, Handler>>>> = {
  [TOKEN_PATH]: {
    POST: async (deps, ex) => {
      const outcome = await handleToken(deps, ex);
      audit(deps.logger, {
        door: 'http',
        requestId: ex.requestId,
        clientId: ex.audit.clientId,
        outcome,
        durationMs: Math.round((performance.now() - ex.startedAt) * 10) / 10,
        apiType: 'token',
      });
    },
  },
  [JWKS_PATH]: { GET: async (deps, ex) => handleJwks(deps, ex) },
  '/api/protect': { POST: protection('http', handleProtect) },
  '/file/protect': { POST: protection('file', handleFileProtect) },
  '/healthz': { GET: async (deps, ex) => handleHealthz(deps, ex) },
  '/readyz': { GET: async (deps, ex) => handleReadyz(deps, ex) },
  '/metrics': { GET: handleMetrics },
  '/openapi.json': { GET: handleOpenApi },
  '/proxy/ca.pem': {
    GET: async (deps, ex) => {
      if (!handleProxyCa(deps, ex)) sendProblem(ex.res, routeProblem(404, ex.requestId));
    },
  },
};

/** Answers an error: problem+json before the first byte, a cut connection after it. Logs names only. */
function reportFailure(deps: HttpDeps, ex: Exchange, error: DpgError): void {
  if (error.code === 'INTERNAL') {
    const cause = error.cause as { name?: unknown; message?: unknown; stack?: unknown } | undefined;
    const frames = callsiteFrames(cause);
    deps.logger.error({ requestId: ex.requestId, errorName: typeof cause?.name === 'string' ? cause.name : 'unknown', frames }, 'internal error');
  }
  if (ex.res.headersSent) {
    // A CSV already under way must not end looking complete: cut the connection instead.
    ex.res.destroy();
    ex.req.socket.destroy();
    return;
  }
  sendProblem(ex.res, problemFromError(error, ex.requestId), {
    closeConnection: !ex.req.complete,
    headers: error.code === 'UNAUTHENTICATED' ? BEARER_CHALLENGE : undefined,
  });
}

/** How many callsite frames an internal error log line keeps. */
const MAX_LOGGED_FRAMES = 7;
const CALLSITE_FRAME = /^\s+at /;

/**
 * The callsite frames of a thrown value's stack, never its message: a foreign message may span
 * several lines and quote payload data (even lines that look like frames). V8 writes the stack as
 * `Name: message` then the frames, so the frames are read only after that exact header; a stack
 * that does not start with it (message changed after the throw, custom stack) logs no frames.
 */
export function callsiteFrames(cause: { name?: unknown; message?: unknown; stack?: unknown } | undefined): string | undefined {
  if (typeof cause?.stack !== 'string') return undefined;
  const name = typeof cause.name === 'string' ? cause.name : 'Error';
  const message = typeof cause.message === 'string' ? cause.message : '';
  const header = message === '' ? name : `${name}: ${message}`;
  if (!cause.stack.startsWith(`${header}\n`)) return undefined;
  const frames = cause.stack
    .slice(header.length + 1)
    .split('\n')
    .filter((line) => CALLSITE_FRAME.test(line))
    .slice(0, MAX_LOGGED_FRAMES);
  return frames.length === 0 ? undefined : frames.join('\n');
}

/** Probes, scrapes and static documents: cheap, and what tells an operator the gateway is saturated. Never shed. */
const NEVER_SHED = new Set(['/healthz', '/readyz', '/metrics', '/proxy/ca.pem', JWKS_PATH]);

function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

export async function startHttpServer(deps: HttpDeps): Promise<RunningServer> {
  let closing = false;
  /** Requests being answered (their Connection header is set at close when not yet sent). */
  const answering = new Set<ServerResponse>();
  let inFlight = 0;
  const gate = deps.overload?.gate('http');
  const retryAfter = String(deps.overload?.config.retryAfterSeconds ?? 1);

  const server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS }, (req: IncomingMessage, res: ServerResponse) => {
    const clientRequestId = clientRequestIdFrom(req);
    const ex: Exchange = {
      req,
      res,
      requestId: clientRequestId ?? randomUUID(),
      clientRequestId,
      startedAt: performance.now(),
      audit: {},
    };
    inFlight++;
    answering.add(res);
    res.on('close', () => {
      inFlight--;
      answering.delete(res);
      if (closing) server.closeIdleConnections();
    });
    if (closing) res.setHeader('Connection', 'close');

    const methods = routes[pathOf(req.url)];
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const handler = methods === undefined ? undefined : methods[method];
    if (handler === undefined) {
      const status = methods === undefined ? 404 : 405;
      sendProblem(res, routeProblem(status, ex.requestId), {
        closeConnection: !req.complete,
        headers: status === 405 ? { Allow: Object.keys(methods ?? {}).join(', ') } : undefined,
      });
      return;
    }
    if (gate !== undefined && !NEVER_SHED.has(pathOf(req.url))) {
      const admission = admitRequest(gate, req, res);
      if (typeof admission === 'string') {
        // Refused before any work: the body is left unread and the connection closed with the answer.
        sendProblem(res, problemFromError(overloadedError('http', admission), ex.requestId), {
          closeConnection: !req.complete,
          headers: { 'Retry-After': retryAfter },
        });
        return;
      }
    }
    handler(deps, ex).catch((err: unknown) => reportFailure(deps, ex, toDpgError(err)));
  });

  const address = await listenOn(server, deps.config.http.listen.host, deps.config.http.listen.port);
  deps.logger.info({ listener: 'http', host: address.host, port: address.port }, 'HTTP API listening');

  return {
    address,
    close(graceMs = deps.config.http.shutdownGraceMs): Promise<void> {
      closing = true;
      // Answers not started yet say `Connection: close`: the client does not send again on them.
      for (const res of answering) if (!res.headersSent) res.setHeader('Connection', 'close');
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          deps.logger.warn({ listener: 'http', inFlight, graceMs }, 'HTTP API: grace period over; cutting what is left');
          server.closeAllConnections();
        }, graceMs);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          deps.logger.info({ listener: 'http', inFlight }, 'HTTP API closed');
          resolve();
        });
        server.closeIdleConnections();
      });
    },
  };
}
