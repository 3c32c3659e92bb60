// The egress sidecar proxy: a forward proxy (absolute-form HTTP and CONNECT, with TLS interception
// for routed hosts) and reverse listeners, all sharing one route table, one upstream pool and the engine.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ProxyConfig, ProxyRoute, ReverseListener } from '../config/types.ts';
import { DpgError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Engine } from '../engine/types.ts';
import { LeafCertificates, loadOrCreateCa } from './ca.ts';
import { createExchange, requestFacts, type CompiledRouteSet, type Exchange, type Target } from './exchange.ts';
import { compilePhase, type CompiledPhase } from './phase.ts';
import { sendProblem } from './problem.ts';
import { compileRoutes, stripBrackets } from './routes.ts';
import { handleConnect, type TunnelTarget } from './tunnel.ts';
import { handleUpgrade } from './upgrade.ts';
import { createUpstreamAgent, upstreamRoots } from './upstream.ts';

export interface ProxyDeps {
  readonly config: ProxyConfig;
  readonly dataDir: string;
  readonly engine: Engine;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Readiness for origin-form `GET /readyz` (the sidecar profile's probe); absent: ready once listening. */
  readonly isReady?: () => boolean;
}

export interface RunningProxy {
  readonly address: { host: string; port: number };
  readonly reverse: { host: string; port: number; upstream: string }[];
  /** The gateway CA certificate apps must trust for intercepted hosts. */
  readonly caPem: string;
  close(graceMs?: number): Promise<void>;
}

const DEFAULT_MAX_BODY = 10 * 1024 * 1024;

/** Compiles every route's phases once; a bad phase is a start-up error naming the route. */
export function compileRouteSet(routes: readonly ProxyRoute[], engine: Engine, logger?: Logger): CompiledRouteSet {
  const phases = new Map<ProxyRoute, { request?: CompiledPhase; response?: CompiledPhase }>();
  const normalised = routes.map((r) => ({
    ...r,
    onError: r.onError ?? 'reject',
    maxBodyBytes: r.maxBodyBytes ?? DEFAULT_MAX_BODY,
    match: r.match ?? {},
  }));
  for (const route of normalised) {
    const compile = (phase: NonNullable<ProxyRoute['request']>, which: string): CompiledPhase => {
      try {
        const compiled = compilePhase(phase, engine);
        if (!engine.hasManifest(compiled.manifest)) {
          logger?.warn({ route: route.name, manifest: compiled.manifest }, `proxy: route ${which} phase names an unknown manifest; its requests will fail`);
        }
        return compiled;
      } catch (err) {
        const detail = err instanceof DpgError ? err.message : 'invalid';
        throw new Error(`proxy.routes[${route.name}].${which}: ${detail}`, { cause: err });
      }
    };
    phases.set(route, {
      request: route.request ? compile(route.request, 'request') : undefined,
      response: route.response ? compile(route.response, 'response') : undefined,
    });
  }
  return { table: compileRoutes(normalised), phases };
}

function listen(server: Server, host: string, port: number): Promise<{ host: string; port: number }> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const a = server.address() as AddressInfo;
      resolve({ host: a.address, port: a.port });
    });
  });
}

/** Target of an absolute-form request line, keeping the path bytes exactly as sent. */
export function absoluteTarget(url: string): Target | undefined {
  const scheme = url.startsWith('http://') ? 'http' : url.startsWith('https://') ? 'https' : undefined;
  if (scheme === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const afterAuthority = url.slice(scheme.length + 3).search(/[/?]/);
  let path = afterAuthority === -1 ? '/' : url.slice(scheme.length + 3 + afterAuthority);
  if (path.startsWith('?')) path = '/' + path;
  const hash = path.indexOf('#');
  if (hash !== -1) path = path.slice(0, hash);
  return {
    scheme,
    host: stripBrackets(parsed.hostname).toLowerCase(),
    port: parsed.port === '' ? (scheme === 'https' ? 443 : 80) : Number(parsed.port),
    path,
    hostHeader: parsed.host,
  };
}

function reverseTarget(base: URL, basePath: string, reqUrl: string): Target {
  return {
    scheme: base.protocol === 'https:' ? 'https' : 'http',
    host: stripBrackets(base.hostname).toLowerCase(),
    port: base.port === '' ? (base.protocol === 'https:' ? 443 : 80) : Number(base.port),
    path: basePath + (reqUrl.startsWith('/') ? reqUrl : `/${reqUrl}`),
    hostHeader: base.host,
  };
}

/** Listens on the forward address and every reverse address; resolves once all are bound. */
export async function startProxy(deps: ProxyDeps): Promise<RunningProxy> {
  const { config, dataDir, engine, logger, metrics } = deps;
  const ca = loadOrCreateCa(config.ca, dataDir);
  const leaves = new LeafCertificates(ca);
  const roots = upstreamRoots(config.upstreamCa);
  const connectTimeoutMs = config.connectTimeoutMs ?? 10_000;
  const agent = createUpstreamAgent({ connectTimeoutMs, responseTimeoutMs: config.responseTimeoutMs ?? 60_000 }, roots);
  const routes = compileRouteSet(config.routes ?? [], engine, logger);
  const exchange: Exchange = createExchange({ routes, agent, logger, metrics });
  const targets = new WeakMap<object, TunnelTarget>();
  const sockets = new Set<Duplex>();
  const intercepted = new Set<Duplex>();
  const tunnelDeps = { routes: routes.table, leaves, targets, connectTimeoutMs, logger, sockets, intercepted };
  const upgradeDeps = { routes: routes.table, connectTimeoutMs, sockets, ca: roots };
  /** Every listener's upgrades: routed requests are refused, h2c is replayed as HTTP/1.1 (upgrade.ts). */
  const onUpgrade = (server: Server, targetOf: (req: IncomingMessage) => Target | undefined) => (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const target = targetOf(req);
    if (!target) {
      socket.destroy();
      return;
    }
    handleUpgrade(upgradeDeps, server, req, socket, head, target, requestFacts(req, target));
  };
  let shuttingDown = false;
  /** Exchanges in progress per connection: idle intercepted connections are closed at shutdown. */
  const inFlight = new WeakMap<object, number>();

  /** Serves a request once its target is known, answering Expect: 100-continue ourselves. */
  const serve = (req: IncomingMessage, res: ServerResponse, target: Target, expectsContinue: boolean): void => {
    // While shutting down, finish this exchange but end its keep-alive connection.
    if (shuttingDown) res.shouldKeepAlive = false;
    const socket = req.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    res.once('close', () => {
      inFlight.set(socket, (inFlight.get(socket) ?? 1) - 1);
      if (shuttingDown && intercepted.has(socket) && inFlight.get(socket) === 0) socket.destroy();
    });
    if (expectsContinue) {
      const refusal = exchange.refuseBeforeBody(req, target);
      if (refusal) {
        sendProblem(res, refusal, undefined, true);
        return;
      }
      res.writeContinue();
    }
    exchange.handle(req, res, target);
  };

  // Forward proxy: absolute-form requests, CONNECT, and GET /proxy/ca.pem for convenience.
  const forward = createServer({ keepAliveTimeout: 30_000 });
  const onForward = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const target = absoluteTarget(req.url ?? '');
    if (target) {
      serve(req, res, target, expectsContinue);
      return;
    }
    // Health for probes when the HTTP API is off (sidecar profile): dpg probe asks here.
    if (req.method === 'GET' && (req.url === '/healthz' || req.url === '/readyz')) {
      const ok = req.url === '/healthz' || (deps.isReady?.() ?? true);
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(ok ? '{"status":"ok"}' : '{"status":"starting"}');
      return;
    }
    if (req.method === 'GET' && req.url === '/proxy/ca.pem') {
      res.writeHead(200, { 'content-type': 'application/x-pem-file', 'content-length': Buffer.byteLength(ca.certPem) });
      res.end(ca.certPem);
      return;
    }
    sendProblem(res, { status: 400, code: 'INVALID_REQUEST', title: 'Invalid request', detail: 'This is a forward proxy: send absolute-form requests (set HTTP_PROXY / HTTPS_PROXY)' }, undefined, true);
  };
  forward.on('request', onForward(false));
  forward.on('checkContinue', onForward(true));
  forward.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => handleConnect({ ...tunnelDeps, interceptServer }, req, socket, head));
  forward.on('upgrade', onUpgrade(forward, (req) => absoluteTarget(req.url ?? '')));

  // Decrypted (or plain) HTTP from intercepted CONNECT tunnels; never listens itself.
  const interceptServer = createServer({ keepAliveTimeout: 30_000 });
  const interceptTarget = (req: IncomingMessage): Target | undefined => {
    const t = targets.get(req.socket);
    return t && { ...t, path: req.url?.startsWith('/') ? req.url : '/', hostHeader: undefined };
  };
  const onIntercepted = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const target = interceptTarget(req);
    if (!target) {
      res.destroy();
      return;
    }
    serve(req, res, target, expectsContinue);
  };
  interceptServer.on('request', onIntercepted(false));
  interceptServer.on('checkContinue', onIntercepted(true));
  interceptServer.on('upgrade', onUpgrade(interceptServer, interceptTarget));

  const servers: Server[] = [forward];
  const address = await listen(forward, config.listen.host, config.listen.port);
  logger.info({ listener: 'proxy', host: address.host, port: address.port, ca: ca.source }, 'egress proxy listening');

  const reverse: RunningProxy['reverse'] = [];
  try {
    for (const r of config.reverse ?? []) reverse.push(await startReverse(r));
  } catch (err) {
    forward.close();
    for (const s of servers) s.closeAllConnections();
    await agent.close();
    throw err;
  }

  async function startReverse(r: ReverseListener): Promise<{ host: string; port: number; upstream: string }> {
    const base = new URL(r.upstream);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error(`proxy.reverse upstream ${r.upstream} must be http or https`);
    const basePath = base.pathname.replace(/\/+$/, '');
    const server = createServer({ keepAliveTimeout: 30_000 });
    const onReverse = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) =>
      serve(req, res, reverseTarget(base, basePath, req.url ?? '/'), expectsContinue);
    server.on('request', onReverse(false));
    server.on('checkContinue', onReverse(true));
    server.on('upgrade', onUpgrade(server, (req) => reverseTarget(base, basePath, req.url ?? '/')));
    server.on('connect', (_req: IncomingMessage, socket: Duplex) => socket.end('HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n'));
    servers.push(server);
    const a = await listen(server, r.listen.host, r.listen.port);
    logger.info({ listener: 'proxy-reverse', host: a.host, port: a.port, upstream: base.origin }, 'reverse proxy listening');
    return { ...a, upstream: r.upstream };
  }

  let closing: Promise<void> | undefined;
  return {
    address,
    reverse,
    caPem: ca.certPem,
    close(graceMs = 10_000) {
      closing ??= (async () => {
        shuttingDown = true;
        const closed = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
        for (const s of servers) s.closeIdleConnections();
        const timer = setTimeout(() => {
          for (const s of servers) s.closeAllConnections();
          for (const socket of [...sockets, ...intercepted]) socket.destroy();
        }, graceMs);
        timer.unref();
        // Tunnels are long-lived by nature: they do not hold shutdown open.
        for (const socket of sockets) socket.destroy();
        // Intercepted connections: idle ones now, busy ones after their exchange (or at the grace limit).
        for (const socket of intercepted) if ((inFlight.get(socket) ?? 0) === 0) socket.destroy();
        await Promise.all(closed);
        while (intercepted.size > 0) await new Promise((r) => setTimeout(r, 25));
        clearTimeout(timer);
        await agent.close();
      })();
      return closing;
    },
  };
}
