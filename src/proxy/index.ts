// The egress sidecar proxy: a forward proxy (absolute-form HTTP and CONNECT, with TLS interception
// for routed hosts) and reverse listeners, all sharing one route table, one upstream pool and the engine.
//
// The folder follows the data: listeners (this file: forward, reverse and intercepted tunnels;
// transparent/: connections redirected by capture) hand each request to reading/ (what the request
// is, and which route covers it: one reading shared by every listener), then to exchange/ (one
// exchange: read the body under a limit, protect it with the route's phase, answer the app), which
// uses forwarding/ (the upstream pool, CONNECT tunnels, upgrades, splices, interception
// certificates, connection limits). problem.ts holds the answers the proxy itself gives.

import { listenOn } from '../core/listen.ts';
import { readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ProxyConfig, ProxyRoute, ReverseListener } from '../config/types.ts';
import { DpgError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Engine } from '../engine/types.ts';
import { loadOrCreateCa } from '../crypto/gateway-ca.ts';
import { LeafCertificates } from './forwarding/ca.ts';
import { ConnectionLimits, IdleSweeper } from './forwarding/connection-limits.ts';
import { DialAddresses } from './reading/dial-address.ts';
import { createExchange, requestFacts, type CompiledRouteSet, type Exchange, type Target } from './exchange/exchange.ts';
import { compilePhase, type CompiledPhase } from './exchange/phase.ts';
import { problemOf, sendProblem, sendProblemOnSocket } from './problem.ts';
import { forwardTarget, reverseBase, reverseTarget, tunnelTarget, type TargetReading } from './reading/request-target.ts';
import { RouteHostAddresses, systemResolver, type HostAliases, type ResolveHost } from './reading/route-host-addresses.ts';
import { canonicalHost, compileRoutes, isValidHostPattern } from './reading/routes.ts';
import { handleConnect, type TunnelTarget } from './forwarding/tunnel.ts';
import { handleUpgrade } from './forwarding/upgrade.ts';
import { drainTunnels } from './forwarding/tunnel-drain.ts';
import { proxyHealthSocket } from '../core/health-socket.ts';
import type { TransparentDeps } from './transparent/index.ts';
import { createUpstreamAgent, upstreamProblem, upstreamRoots } from './forwarding/upstream.ts';

export interface ProxyDeps {
  readonly config: ProxyConfig;
  readonly dataDir: string;
  readonly engine: Engine;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Resolves route host names (their addresses count as them). Default: getaddrinfo. */
  readonly resolveHost?: ResolveHost;
  /** Tests of the transparent listener without a kernel redirect: where each connection was going. */
  readonly transparentOverrides?: Pick<TransparentDeps, 'originalDestination'>;
  /** The gateway's readiness for origin-form `GET /readyz` (the sidecar profile's probe); absent: the proxy's own. */
  readonly isReady?: () => boolean;
}

export interface RunningProxy {
  readonly address: { host: string; port: number };
  readonly reverse: { host: string; port: number; upstream: string }[];
  /** The transparent listener's addresses (IPv4 and its IPv6 twin); empty when it is off. */
  readonly transparent: readonly { host: string; port: number }[];
  /** The gateway CA certificate apps must trust for intercepted hosts. */
  readonly caPem: string;
  /**
   * Whether the proxy can take work: every listener listening and under its maxConnections, no
   * recent file-descriptor shortage, route host names looked up once. `/readyz` reflects it.
   */
  ready(): boolean;
  /** Why `ready()` is false (undefined when it is true). */
  notReadyReason(): string | undefined;
  close(graceMs?: number): Promise<void>;
}

const DEFAULT_MAX_BODY = 10 * 1024 * 1024;
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_CONNECTIONS = 1024;
export const DEFAULT_ROUTE_HOSTS_REFRESH_MS = 60_000;

/** Compiles every route's phases once; a bad phase is a start-up error naming the route. */
export function compileRouteSet(routes: readonly ProxyRoute[], engine: Engine, logger?: Logger, aliases?: HostAliases): CompiledRouteSet {
  const phases = new Map<ProxyRoute, { request?: CompiledPhase; response?: CompiledPhase }>();
  const normalised = routes.map((r) => ({
    ...r,
    onError: r.onError ?? 'reject',
    maxBodyBytes: r.maxBodyBytes ?? DEFAULT_MAX_BODY,
    match: r.match ?? {},
  }));
  for (const route of normalised) {
    if (route.match.host !== undefined && !isValidHostPattern(route.match.host)) {
      throw new Error(`proxy.routes[${route.name}].match.host: must be a host name, an IP address, *.name or *`);
    }
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
  return { table: compileRoutes(normalised, aliases), phases };
}

/** The forward server on a Unix socket (a stale socket file of an earlier run is replaced); host is the path. */
function listenHealthSocket(server: Server, path: string): Promise<{ host: string; port: number }> {
  rmSync(path, { force: true });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve({ host: path, port: 0 });
    });
  });
}

/**
 * A request node:http could not parse (a raw control byte in the target, a malformed head): a 400
 * problem like every other refusal, instead of node's bare one. Nothing reached an upstream.
 */
function onClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  if (err.code === 'HPE_HEADER_OVERFLOW') socket.end('HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n');
  else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
  else sendProblemOnSocket(socket, problemOf(new DpgError('INVALID_REQUEST', 'The request could not be parsed as HTTP/1.1')));
}

/** The soft open-files limit, when the platform tells it (Linux /proc). */
function openFilesLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Listens on the forward address and every reverse address; resolves once all are bound. */
export async function startProxy(deps: ProxyDeps): Promise<RunningProxy> {
  const { config, dataDir, engine, logger, metrics } = deps;
  const ca = loadOrCreateCa(config.ca, dataDir);
  const leaves = new LeafCertificates(ca);
  const roots = upstreamRoots(config.upstreamCa);
  const connectTimeoutMs = config.connectTimeoutMs ?? 10_000;
  const maxConnections = config.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  /** Set when undici could not be loaded: nothing can reach an upstream until a restart. */
  let upstreamUnloadable = false;
  const onLoadFailed = (err: unknown): void => {
    upstreamUnloadable = true;
    logger.error({ code: (err as { code?: string })?.code }, 'proxy: the upstream client could not be loaded; no upstream can be reached until the gateway is restarted');
  };
  const agent = createUpstreamAgent({ connectTimeoutMs, responseTimeoutMs: config.responseTimeoutMs ?? 60_000, onLoadFailed }, roots);
  const hostAddresses = new RouteHostAddresses({
    names: (config.routes ?? []).map((r) => r.match?.host ?? '').filter((h) => h !== '' && isValidHostPattern(h)).map(canonicalHost),
    resolve: deps.resolveHost ?? systemResolver,
    refreshMs: config.routeHostsRefreshMs ?? DEFAULT_ROUTE_HOSTS_REFRESH_MS,
    logger,
  });
  const routes = compileRouteSet(config.routes ?? [], engine, logger, hostAddresses);
  // Names on ports a route for an address or a name covers: resolved, matched and dialled as their
  // address, as the transparent listener matches them (dial-address.ts).
  const dial = new DialAddresses({
    routes: config.routes ?? [],
    routed: (address, port) => routes.table.intercepts(address, port),
    resolve: deps.resolveHost ?? systemResolver,
    refreshMs: config.routeHostsRefreshMs ?? DEFAULT_ROUTE_HOSTS_REFRESH_MS,
  });
  const pin = (host: string, port: number): Promise<string> | undefined => dial.pin(host, port);
  /** The target dialled at its resolved address when one must be fixed first (dial-address.ts). */
  const pinTarget = (target: Target): Promise<Target> | undefined => {
    if (target.connectTo !== undefined) return undefined;
    return pin(target.host, target.port)?.then((address) => ({
      ...target,
      connectTo: { address, servername: target.scheme === 'https' ? target.host : undefined },
    }));
  };
  const targets = new WeakMap<object, TunnelTarget>();
  const sockets = new Set<Duplex>();
  const intercepted = new Set<Duplex>();
  /** Intercepting TLS socket → the client connection under it. */
  const outer = new WeakMap<object, Duplex>();
  /** Exchanges in progress per client connection (keyed by the raw socket, also for intercepted TLS). */
  const inFlight = new WeakMap<object, number>();
  const rawOf = (socket: object): object => outer.get(socket) ?? socket;
  const sweeper = new IdleSweeper(config.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, (socket) => (inFlight.get(socket) ?? 0) > 0);
  const limits = new ConnectionLimits(logger, sweeper);
  // Every dial that fails for want of a descriptor (exchange, blind tunnel, upgrade) makes the proxy not ready for a while.
  const onResourceExhausted = (): void => limits.exhausted();
  const exchange: Exchange = createExchange({ routes, agent, logger, metrics, onResourceExhausted });
  const tunnelDeps = { routes: routes.table, leaves, targets, connectTimeoutMs, logger, sockets, intercepted, outer, pin, onResourceExhausted };
  const upgradeDeps = { routes: routes.table, connectTimeoutMs, sockets, ca: roots, onResourceExhausted };

  /** A request target that cannot be read one way: 400, the connection closed, nothing sent upstream. */
  const refuseTarget = (res: ServerResponse, reason: string): void =>
    sendProblem(res, problemOf(new DpgError('INVALID_REQUEST', reason)), undefined, true);

  /** Every listener's upgrades: routed requests are refused, h2c is replayed as HTTP/1.1 (upgrade.ts). */
  const onUpgrade = (server: Server, read: (req: IncomingMessage) => TargetReading | undefined) => (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const reading = read(req);
    if (reading === undefined) {
      socket.destroy();
      return;
    }
    if (!reading.ok) {
      socket.on('error', () => socket.destroy());
      sendProblemOnSocket(socket, problemOf(new DpgError('INVALID_REQUEST', reading.reason)));
      return;
    }
    const upgrade = (target: Target): void => handleUpgrade(upgradeDeps, server, req, socket, head, target, requestFacts(req, target));
    const pinning = pinTarget(reading.target);
    if (pinning === undefined) upgrade(reading.target);
    else {
      socket.on('error', () => socket.destroy());
      pinning.then(upgrade, (err: unknown) => sendProblemOnSocket(socket, upstreamProblem(err)));
    }
  };
  let shuttingDown = false;
  /** Exchanges being answered: told at shutdown to close their connection after the answer. */
  const answering = new Set<ServerResponse>();

  /** Serves a request once its target is known, answering Expect: 100-continue ourselves. */
  const serve = (req: IncomingMessage, res: ServerResponse, reading: TargetReading, expectsContinue: boolean): void => {
    if (!reading.ok) {
      refuseTarget(res, reading.reason);
      return;
    }
    const pinning = pinTarget(reading.target);
    if (pinning === undefined) serveTarget(req, res, reading.target, expectsContinue);
    else {
      pinning.then(
        (target) => serveTarget(req, res, target, expectsContinue),
        (err: unknown) => {
          if (!res.destroyed) sendProblem(res, upstreamProblem(err), undefined, true);
        },
      );
    }
  };

  const serveTarget = (req: IncomingMessage, res: ServerResponse, target: Target, expectsContinue: boolean): void => {
    // While shutting down, finish this exchange but end its keep-alive connection.
    if (shuttingDown) res.shouldKeepAlive = false;
    const socket = req.socket;
    const raw = rawOf(socket);
    inFlight.set(raw, (inFlight.get(raw) ?? 0) + 1);
    answering.add(res);
    res.once('close', () => {
      answering.delete(res);
      inFlight.set(raw, (inFlight.get(raw) ?? 1) - 1);
      if (!shuttingDown) return;
      if (intercepted.has(socket) && inFlight.get(raw) === 0) socket.destroy();
      // A keep-alive connection whose exchange was in flight at the signal is idle now: closed.
      else for (const s of servers) s.closeIdleConnections();
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
  limits.guard(forward, 'proxy', maxConnections);
  forward.on('clientError', onClientError);
  const onForward = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '';
    if (req.method === 'GET' && url === '/proxy/ca.pem') {
      res.writeHead(200, { 'content-type': 'application/x-pem-file', 'content-length': Buffer.byteLength(ca.certPem) });
      res.end(ca.certPem);
      return;
    }
    // Health for probes when the HTTP API is off (sidecar profile): dpg probe asks here.
    if (req.method === 'GET' && (url === '/healthz' || url === '/readyz')) {
      const ok = url === '/healthz' || (deps.isReady?.() ?? notReadyReason() === undefined);
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(ok ? '{"status":"ok"}' : '{"status":"starting"}');
      return;
    }
    if (url.startsWith('/')) {
      refuseTarget(res, 'This is a forward proxy: send absolute-form requests (set HTTP_PROXY / HTTPS_PROXY)');
      return;
    }
    serve(req, res, forwardTarget(url), expectsContinue);
  };
  forward.on('request', onForward(false));
  forward.on('checkContinue', onForward(true));
  forward.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => handleConnect({ ...tunnelDeps, interceptServer }, req, socket, head));
  forward.on('upgrade', onUpgrade(forward, (req) => forwardTarget(req.url ?? '')));

  // Decrypted (or plain) HTTP from intercepted CONNECT tunnels; never listens itself.
  const interceptServer = createServer({ keepAliveTimeout: 30_000 });
  interceptServer.on('clientError', onClientError);
  const interceptTarget = (req: IncomingMessage): TargetReading | undefined => {
    const tunnel = targets.get(req.socket);
    return tunnel && tunnelTarget(req.url ?? '', tunnel, req.headers.host, hostAddresses);
  };
  const onIntercepted = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const reading = interceptTarget(req);
    if (!reading) {
      res.destroy();
      return;
    }
    serve(req, res, reading, expectsContinue);
  };
  interceptServer.on('request', onIntercepted(false));
  interceptServer.on('checkContinue', onIntercepted(true));
  interceptServer.on('upgrade', onUpgrade(interceptServer, interceptTarget));

  const servers: Server[] = [forward];
  // forward: off (DPG_PROXY_ADDR=off): no TCP forward listener, a way around capture; health on a Unix socket.
  const address = config.forward === 'off' ? await listenHealthSocket(forward, proxyHealthSocket(deps.dataDir)) : await listenOn(forward, config.listen.host, config.listen.port);
  if (config.forward === 'off') logger.info({ listener: 'proxy', forward: 'off', health: address.host }, 'egress proxy listener off; health on a Unix socket');
  else logger.info({ listener: 'proxy', host: address.host, port: address.port, ca: ca.source, maxConnections }, 'egress proxy listening');

  const reverse: RunningProxy['reverse'] = [];
  try {
    for (const [i, r] of (config.reverse ?? []).entries()) reverse.push(await startReverse(r, i));
  } catch (err) {
    forward.close();
    for (const s of servers) s.closeAllConnections();
    sweeper.close();
    await agent.close();
    throw err;
  }
  const fdLimit = openFilesLimit();
  // A blind tunnel holds two descriptors (app and upstream side); keep room for the rest of the process.
  if (fdLimit !== undefined && servers.length * maxConnections * 2 + 256 > fdLimit) {
    logger.warn({ maxConnections, listeners: servers.length, openFilesLimit: fdLimit }, 'proxy: maxConnections × listeners × 2 is above the open-files limit (ulimit -n); raise the limit or lower maxConnections');
  }
  // Route host names: looked up now and on the refresh interval; readiness waits for the first round.
  void hostAddresses.start();

  // The transparent listener (proxy.transparent), imported only when on: it loads the FFI (koffi)
  // that reads SO_ORIGINAL_DST. It shares this proxy's CA, routes, route host addresses, exchange,
  // connection caps, idle sweeping and shutdown.
  let transparent: { addresses: readonly { host: string; port: number }[]; close(): Promise<void> } | undefined;
  if (config.transparent) {
    try {
      const { startTransparent } = await import('./transparent/index.ts');
      transparent = await startTransparent({
        config: config.transparent,
        routes: config.routes ?? [],
        table: routes.table,
        leaves,
        connectTimeoutMs,
        logger,
        serve,
        onUpgrade,
        onClientError,
        guard: (server, name) => limits.guard(server, name, maxConnections),
        onResourceExhausted,
        sockets,
        intercepted,
        outer,
        ...deps.transparentOverrides,
      });
    } catch (err) {
      for (const s of servers) {
        s.close();
        s.closeAllConnections();
      }
      hostAddresses.close();
      sweeper.close();
      await agent.close();
      throw err;
    }
  }

  async function startReverse(r: ReverseListener, index: number): Promise<{ host: string; port: number; upstream: string }> {
    const base = reverseBase(r.upstream);
    const server = createServer({ keepAliveTimeout: 30_000 });
    limits.guard(server, `reverse${index}`, maxConnections);
    server.on('clientError', onClientError);
    const onReverse = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) =>
      serve(req, res, reverseTarget(base, req.url ?? ''), expectsContinue);
    server.on('request', onReverse(false));
    server.on('checkContinue', onReverse(true));
    server.on('upgrade', onUpgrade(server, (req) => reverseTarget(base, req.url ?? '')));
    server.on('connect', (_req: IncomingMessage, socket: Duplex) => socket.end('HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n'));
    servers.push(server);
    const a = await listenOn(server, r.listen.host, r.listen.port);
    logger.info({ listener: 'proxy-reverse', host: a.host, port: a.port, upstream: new URL(r.upstream).origin }, 'reverse proxy listening');
    return { ...a, upstream: r.upstream };
  }

  const notReadyReason = (): string | undefined => {
    if (shuttingDown) return 'shutting down';
    if (!hostAddresses.ready) return 'route host names are being resolved';
    if (upstreamUnloadable) return 'the upstream client could not be loaded (restart the gateway)';
    return limits.notReadyReason();
  };

  let closing: Promise<void> | undefined;
  return {
    address,
    reverse,
    transparent: transparent?.addresses ?? [],
    caPem: ca.certPem,
    ready: () => notReadyReason() === undefined,
    notReadyReason,
    close(graceMs = 10_000) {
      closing ??= (async () => {
        shuttingDown = true;
        // Answers not started yet say `Connection: close`: the client does not send again on them.
        for (const res of answering) if (!res.headersSent) res.shouldKeepAlive = false;
        hostAddresses.close();
        const closed = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
        if (transparent) closed.push(transparent.close());
        for (const s of servers) s.closeIdleConnections();
        // Tunnels and spliced connections: each closed once between exchanges (tunnel-drain.ts).
        const tunnels = drainTunnels(sockets);
        const timer = setTimeout(() => {
          // What the grace period could not finish is cut, and counted (docs/reliability.md#drain).
          logger.warn({ listener: 'proxy', exchanges: answering.size, tunnels: sockets.size, graceMs }, 'proxy: grace period over; cutting what is left');
          tunnels.stop();
          for (const s of servers) s.closeAllConnections();
          for (const socket of [...sockets, ...intercepted]) socket.destroy();
        }, graceMs);
        timer.unref();
        // Intercepted connections: idle ones now, busy ones after their exchange (or at the grace limit).
        for (const socket of intercepted) if ((inFlight.get(rawOf(socket)) ?? 0) === 0) socket.destroy();
        await Promise.all(closed);
        await tunnels.done;
        while (intercepted.size > 0) await new Promise((r) => setTimeout(r, 25));
        clearTimeout(timer);
        sweeper.close();
        await agent.close();
      })();
      return closing;
    },
  };
}
