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
import { DpgError, StartupError } from '../core/errors.ts';
import { admitRequest } from '../core/admit-request.ts';
import { carriesBody } from './exchange/headers.ts';
import { overloadedError, type DoorGate, type Overload } from '../core/overload.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Engine } from '../engine/types.ts';
import type { JobSpec } from '../core/types.ts';
import { caToCreate, loadOrCreateCa } from '../crypto/gateway-ca.ts';
import { loadX509 } from '../crypto/x509.ts';
import { LeafCertificates } from './forwarding/ca.ts';
import { ConnectionLimits, IdleSweeper } from './forwarding/connection-limits.ts';
import { DialAddresses } from './reading/dial-address.ts';
import { createExchange, requestFacts, type CompiledRouteSet, type Exchange, type Target } from './exchange/exchange.ts';
import { compilePhase, type CompiledPhase } from './exchange/phase.ts';
import { problemOf, sendProblem, sendProblemOnSocket } from './problem.ts';
import { forwardTarget, reverseBase, reverseTarget, tunnelTarget, type TargetReading } from './reading/request-target.ts';
import { RouteHostAddresses, systemResolver, type HostAliases, type ResolveHost } from './reading/route-host-addresses.ts';
import { canonicalHost, compilePathMatch, compileRoutes, isValidHostPattern } from './reading/routes.ts';
import { grpcPhase } from './grpc-egress/grpc-phase.ts';
import { loadProtoLibrary } from './grpc-egress/proto-library.ts';
import { loadGrpcMethods, type GrpcMethodPlan } from './grpc-egress/route-descriptors.ts';
import { handleConnect, type TunnelTarget } from './forwarding/tunnel.ts';
import { handleUpgrade } from './forwarding/upgrade.ts';
import { connectionOf, createH2Front } from './http2/h2-front.ts';
import { UpstreamSessions } from './http2/upstream-sessions.ts';
import type { GrpcPhase } from './grpc-egress/contract.ts';
import { drainTunnels } from './forwarding/tunnel-drain.ts';
import { proxyHealthSocket } from '../core/health-socket.ts';
import type { RunningTransparent, TransparentDeps } from './transparent/index.ts';
import type { GatewayCa } from '../crypto/gateway-ca.ts';
import type { Agent } from 'undici';
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
  /** Overload shedding per door (docs/operations.md#overload); absent (proxies built in tests): none. */
  readonly overload?: Overload;
  /**
   * Enters the configuration generation the engine belongs to for one exchange (src/reload/):
   * returns the function that leaves it. Absent: nothing is counted.
   */
  readonly hold?: () => () => void;
  /**
   * gRPC message protection for a route's phase (grpc-egress/contract.ts), beside what the route's
   * config gives: tests of the HTTP/2 side supply their own transform here.
   */
  readonly grpcPhases?: (route: ProxyRoute, phase: 'request' | 'response') => GrpcPhase | undefined;
}

/** A later generation of the proxy's settings (a reload): its config, engine and generation hold. */
export interface ProxyGeneration {
  readonly config: ProxyConfig;
  readonly engine: Engine;
  readonly hold?: () => () => void;
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
  /**
   * Takes a new generation's routes, CA, upstream settings and reverse listeners (added, removed,
   * re-pointed). Everything is prepared first — a failure (bad route, unreadable CA, a reverse
   * address in use) changes nothing — then swapped in one synchronous step with `commit`. Each
   * exchange keeps the routes it started with. The forward and transparent listeners stay.
   */
  reconfigure(next: ProxyGeneration, commit: () => void): Promise<void>;
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
    const methods = route.grpc ? grpcMethodsOf(route) : undefined;
    const compile = (phase: NonNullable<ProxyRoute['request']>, which: 'request' | 'response'): CompiledPhase => {
      try {
        const grpc = methods && ((job: (requestId: string) => JobSpec) => grpcPhase({ methods, direction: which, job, engine, maxMessageBytes: route.maxBodyBytes }));
        const compiled = compilePhase(phase, engine, grpc);
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

/**
 * The gRPC methods a route's `grpc` block and `match.path` select; otherwise a StartupError naming
 * the route (and the .proto file and line): `dpg serve` prints it, a reload logs it and keeps the routes it has.
 */
function grpcMethodsOf(route: ProxyRoute): ReadonlyMap<string, GrpcMethodPlan> {
  const covers = route.match.path === undefined ? () => true : compilePathMatch(route.match.path, route.match.pathMatch ?? 'lenient');
  try {
    return loadGrpcMethods(route.grpc!, covers);
  } catch (err) {
    // Descriptors hold no payload: their loader's message is safe to show.
    throw new StartupError(`proxy.routes[${route.name}].grpc: ${(err as Error).message}`, { cause: err });
  }
}

/** The route set with the gRPC phases `grpcPhases` gives (ProxyDeps.grpcPhases); the same set without it. */
function withGrpcPhases(set: CompiledRouteSet, grpcPhases: ProxyDeps['grpcPhases']): CompiledRouteSet {
  if (grpcPhases === undefined) return set;
  const phases = new Map<ProxyRoute, { request?: CompiledPhase; response?: CompiledPhase }>();
  for (const [route, { request, response }] of set.phases) {
    const add = (phase: CompiledPhase | undefined, which: 'request' | 'response'): CompiledPhase | undefined => {
      const grpc = phase && grpcPhases(route, which);
      return grpc === undefined ? phase : { ...phase!, grpc };
    };
    phases.set(route, { request: add(request, 'request'), response: add(response, 'response') });
  }
  return { table: set.table, phases };
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

/** Everything the proxy reads from one generation of its settings; swapped whole by reconfigure(). */
interface Routing {
  readonly config: ProxyConfig;
  readonly hostAddresses: RouteHostAddresses;
  readonly routes: CompiledRouteSet;
  readonly dial: DialAddresses;
  readonly ca: GatewayCa;
  readonly leaves: LeafCertificates;
  readonly agent: Agent;
  /** The upstream settings `agent` was made with: an equal key reuses it (its pooled connections). */
  readonly agentKey: string;
  /** The pool for apps' h2c requests (HTTP/2 in clear upstream too); made and kept with `agent`. */
  readonly h2cAgent: Agent;
  /** HTTP/2 sessions to upstreams for gRPC calls; made and kept with `agent`. */
  readonly sessions: UpstreamSessions;
  readonly exchange: Exchange;
  readonly hold: () => () => void;
  readonly pinTarget: (target: Target) => Promise<Target> | undefined;
  readonly tunnelDeps: Omit<Parameters<typeof handleConnect>[0], 'interceptServer' | 'interceptH2'>;
  readonly upgradeDeps: Parameters<typeof handleUpgrade>[0];
}

const NO_HOLD = (): (() => void) => () => undefined;

/** Listens on the forward address and every reverse address; resolves once all are bound. */
export async function startProxy(deps: ProxyDeps): Promise<RunningProxy> {
  const { config, dataDir, logger, metrics } = deps;
  // The certificate library is loaded only when a certificate may be built: a leaf for a routed
  // host's intercepted TLS, or the CA on first start. A sidecar with no routes starts without it.
  if ((config.routes ?? []).length > 0 || caToCreate(config.ca, dataDir)) await loadX509();
  if ((config.routes ?? []).some((r) => r.grpc)) await loadProtoLibrary();
  const maxConnections = config.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  /** Set when undici could not be loaded: nothing can reach an upstream until a restart. */
  let upstreamUnloadable = false;
  const onLoadFailed = (err: unknown): void => {
    upstreamUnloadable = true;
    logger.error({ code: (err as { code?: string })?.code }, 'proxy: the upstream client could not be loaded; no upstream can be reached until the gateway is restarted');
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

  /** Compiles one generation's routes, CA and upstream client; throws (changing nothing) when it cannot. */
  const buildRouting = (c: ProxyConfig, engine: Engine, hold: () => () => void, previous?: Routing): Routing => {
    const ca = loadOrCreateCa(c.ca, dataDir);
    // The same CA keeps its leaf cache (minting a leaf costs a key pair).
    const leaves = previous && previous.ca.certPem === ca.certPem ? previous.leaves : new LeafCertificates(ca);
    const connectTimeoutMs = c.connectTimeoutMs ?? 10_000;
    const responseTimeoutMs = c.responseTimeoutMs ?? 60_000;
    const roots = upstreamRoots(c.upstreamCa);
    const agentKey = JSON.stringify([connectTimeoutMs, responseTimeoutMs, roots ?? null]);
    const agent = previous?.agentKey === agentKey ? previous.agent : createUpstreamAgent({ connectTimeoutMs, responseTimeoutMs, onLoadFailed }, roots);
    const h2cAgent = previous?.agentKey === agentKey ? previous.h2cAgent : createUpstreamAgent({ connectTimeoutMs, responseTimeoutMs, onLoadFailed, h2c: true }, roots);
    const sessions = previous?.agentKey === agentKey ? previous.sessions : new UpstreamSessions({ roots, connectTimeoutMs });
    const hostAddresses = new RouteHostAddresses({
      names: (c.routes ?? []).map((r) => r.match?.host ?? '').filter((h) => h !== '' && isValidHostPattern(h)).map(canonicalHost),
      resolve: deps.resolveHost ?? systemResolver,
      refreshMs: c.routeHostsRefreshMs ?? DEFAULT_ROUTE_HOSTS_REFRESH_MS,
      logger,
    });
    let routes: CompiledRouteSet;
    try {
      routes = withGrpcPhases(compileRouteSet(c.routes ?? [], engine, logger, hostAddresses), deps.grpcPhases);
    } catch (err) {
      if (agent !== previous?.agent) {
        void agent.close();
        void h2cAgent.close();
        sessions.close();
      }
      throw err;
    }
    // Names on ports a route for an address or a name covers: resolved, matched and dialled as their
    // address, as the transparent listener matches them (dial-address.ts).
    const dial = new DialAddresses({
      routes: c.routes ?? [],
      routed: (address, port) => routes.table.intercepts(address, port),
      resolve: deps.resolveHost ?? systemResolver,
      refreshMs: c.routeHostsRefreshMs ?? DEFAULT_ROUTE_HOSTS_REFRESH_MS,
      lookupTimeoutMs: connectTimeoutMs,
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
    const exchange: Exchange = createExchange({ routes, agent, h2cAgent, logger, metrics, onResourceExhausted, grpc: { sessions, logger, metrics } });
    return {
      config: c,
      hostAddresses,
      routes,
      dial,
      ca,
      leaves,
      agent,
      agentKey,
      h2cAgent,
      sessions,
      exchange,
      hold,
      pinTarget,
      tunnelDeps: { routes: routes.table, leaves, targets, connectTimeoutMs, logger, sockets, intercepted, outer, pin, onResourceExhausted },
      upgradeDeps: { routes: routes.table, connectTimeoutMs, sockets, roots, onResourceExhausted },
    };
  };
  /** The generation new exchanges, tunnels and upgrades start under. */
  let routing = buildRouting(config, deps.engine, deps.hold ?? NO_HOLD);
  const connectTimeoutMs = routing.tunnelDeps.connectTimeoutMs;

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
    const r = routing;
    const upgrade = (target: Target): void => handleUpgrade(r.upgradeDeps, server, req, socket, head, target, requestFacts(req, target));
    const pinning = r.pinTarget(reading.target);
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
    // The exchange runs whole under the generation in force now, whatever a reload does meanwhile.
    const r = routing;
    const pinning = r.pinTarget(reading.target);
    if (pinning === undefined) serveTarget(r, req, res, reading.target, expectsContinue);
    else {
      pinning.then(
        (target) => serveTarget(r, req, res, target, expectsContinue),
        (err: unknown) => {
          const problem = upstreamProblem(err);
          logger.warn({ code: (err as { code?: string })?.code, port: reading.target.port }, `proxy: ${problem.detail}`);
          if (!res.destroyed) sendProblem(res, problem, undefined, true);
        },
      );
    }
  };

  const serveTarget = (r: Routing, req: IncomingMessage, res: ServerResponse, target: Target, expectsContinue: boolean): void => {
    // While shutting down, finish this exchange but end its keep-alive connection.
    if (shuttingDown) res.shouldKeepAlive = false;
    const socket = connectionOf(req);
    const raw = rawOf(socket);
    inFlight.set(raw, (inFlight.get(raw) ?? 0) + 1);
    const leave = r.hold();
    answering.add(res);
    res.once('close', () => {
      leave();
      answering.delete(res);
      inFlight.set(raw, (inFlight.get(raw) ?? 1) - 1);
      if (!shuttingDown) return;
      if (intercepted.has(socket) && inFlight.get(raw) === 0) socket.destroy();
      // A keep-alive connection whose exchange was in flight at the signal is idle now: closed.
      else for (const s of servers) s.closeIdleConnections();
    });
    if (expectsContinue) {
      const refusal = r.exchange.refuseBeforeBody(req, target);
      if (refusal) {
        sendProblem(res, refusal, undefined, true);
        return;
      }
      res.writeContinue();
    }
    r.exchange.handle(req, res, target);
  };

  const retryAfter = { 'retry-after': String(deps.overload?.config.retryAfterSeconds ?? 1) };
  /**
   * `serve` behind a door's overload gate: a request over its bounds is answered 503 with
   * Retry-After before anything is read or dialled (Expect: 100-continue is never answered).
   */
  const serveAt = (gate: DoorGate | undefined): typeof serve =>
    gate === undefined
      ? serve
      : (req, res, reading, expectsContinue) => {
          // Only a body the proxy will hold (a routed request) counts against the byte bound.
          const holdsBody = reading.ok && carriesBody(req) && routing.exchange.holdsBody(req, reading.target);
          const admission = admitRequest(gate, req, res, holdsBody);
          if (typeof admission === 'string') {
            sendProblem(res, problemOf(overloadedError(gate.door, admission)), undefined, !req.complete, retryAfter);
            return;
          }
          serve(req, res, reading, expectsContinue);
        };
  const forwardGate = deps.overload?.gate('proxy');
  const serveForward = serveAt(forwardGate);
  const serveReverse = serveAt(deps.overload?.gate('reverse'));

  // Forward proxy: absolute-form requests, CONNECT, and GET /proxy/ca.pem for convenience.
  const forward = createServer({ keepAliveTimeout: 30_000 });
  limits.guard(forward, 'proxy', maxConnections);
  forward.on('clientError', onClientError);
  const onForward = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '';
    if (req.method === 'GET' && url === '/proxy/ca.pem') {
      const pem = routing.ca.certPem;
      res.writeHead(200, { 'content-type': 'application/x-pem-file', 'content-length': Buffer.byteLength(pem) });
      res.end(pem);
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
    serveForward(req, res, forwardTarget(url), expectsContinue);
  };
  forward.on('request', onForward(false));
  forward.on('checkContinue', onForward(true));
  forward.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Saturated: refused before any tunnel opens or upstream is dialled (the tunnel itself is
    // bounded by maxConnections; requests inside an intercepted one count at this door).
    const shed = forwardGate?.refuseNew();
    if (shed !== undefined) {
      socket.on('error', () => socket.destroy());
      sendProblemOnSocket(socket, problemOf(overloadedError('proxy', shed)), retryAfter);
      return;
    }
    handleConnect({ ...routing.tunnelDeps, interceptServer, interceptH2 }, req, socket, head);
  });
  forward.on('upgrade', onUpgrade(forward, (req) => forwardTarget(req.url ?? '')));

  // Decrypted (or plain) HTTP from intercepted CONNECT tunnels; never listens itself.
  const interceptServer = createServer({ keepAliveTimeout: 30_000 });
  interceptServer.on('clientError', onClientError);
  const interceptTarget = (req: IncomingMessage): TargetReading | undefined => {
    const tunnel = targets.get(connectionOf(req));
    return tunnel && tunnelTarget(req.url ?? '', tunnel, req.headers.host, routing.hostAddresses);
  };
  const onIntercepted = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const reading = interceptTarget(req);
    if (!reading) {
      res.destroy();
      return;
    }
    serveForward(req, res, reading, expectsContinue);
  };
  interceptServer.on('request', onIntercepted(false));
  interceptServer.on('checkContinue', onIntercepted(true));
  interceptServer.on('upgrade', onUpgrade(interceptServer, interceptTarget));
  // The same for intercepted TLS connections whose ALPN chose h2 (one request per stream).
  const interceptH2 = createH2Front('https', { onRequest: (req, res) => onIntercepted(false)(req, res) });

  const servers: Server[] = [forward];
  // forward: off (DPG_PROXY_ADDR=off): no TCP forward listener, a way around capture; health on a Unix socket.
  const address = config.forward === 'off' ? await listenHealthSocket(forward, proxyHealthSocket(deps.dataDir)) : await listenOn(forward, config.listen.host, config.listen.port);
  if (config.forward === 'off') logger.info({ listener: 'proxy', forward: 'off', health: address.host }, 'egress proxy listener off; health on a Unix socket');
  else logger.info({ listener: 'proxy', host: address.host, port: address.port, ca: routing.ca.source, maxConnections }, 'egress proxy listening');

  /** Reverse listeners by listen address: a reload re-points, adds or closes them. */
  const reverseListeners = new Map<string, ReverseEntry>();
  /** The running reverse listeners, in config order (kept in place: RunningProxy.reverse). */
  const reverse: RunningProxy['reverse'] = [];
  let reverseCount = 0;
  try {
    for (const r of config.reverse ?? []) {
      const entry = await startReverse(r);
      reverseListeners.set(reverseKey(r), entry);
      reverse.push(entry.address);
    }
  } catch (err) {
    forward.close();
    for (const s of servers) s.closeAllConnections();
    sweeper.close();
    await routing.agent.close();
    throw err;
  }
  const fdLimit = openFilesLimit();
  // A blind tunnel holds two descriptors (app and upstream side); keep room for the rest of the process.
  if (fdLimit !== undefined && servers.length * maxConnections * 2 + 256 > fdLimit) {
    logger.warn({ maxConnections, listeners: servers.length, openFilesLimit: fdLimit }, 'proxy: maxConnections × listeners × 2 is above the open-files limit (ulimit -n); raise the limit or lower maxConnections');
  }
  // Route host names: looked up now and on the refresh interval; readiness waits for the first round.
  void routing.hostAddresses.start();

  // The transparent listener (proxy.transparent), imported only when on: it loads the FFI (koffi)
  // that reads SO_ORIGINAL_DST. It shares this proxy's CA, routes, route host addresses, exchange,
  // connection caps, idle sweeping and shutdown.
  let transparent: RunningTransparent | undefined;
  if (config.transparent) {
    try {
      const { startTransparent } = await import('./transparent/index.ts');
      transparent = await startTransparent({
        config: config.transparent,
        routes: config.routes ?? [],
        table: routing.routes.table,
        leaves: routing.leaves,
        connectTimeoutMs,
        logger,
        serve: serveAt(deps.overload?.gate('transparent')),
        admitConnection: () => deps.overload?.gate('transparent').refuseNew() === undefined,
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
      routing.hostAddresses.close();
      sweeper.close();
      await routing.agent.close();
      throw err;
    }
  }

  async function startReverse(r: ReverseListener): Promise<ReverseEntry> {
    const server = createServer({ keepAliveTimeout: 30_000 });
    const entry: ReverseEntry = { server, base: reverseBase(r.upstream), address: { host: r.listen.host, port: r.listen.port, upstream: r.upstream } };
    limits.guard(server, `reverse${reverseCount++}`, maxConnections);
    server.on('clientError', onClientError);
    // entry.base is read per request: a reload may point the listener at another upstream.
    const onReverse = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) =>
      serveReverse(req, res, reverseTarget(entry.base, req.url ?? ''), expectsContinue);
    server.on('request', onReverse(false));
    server.on('checkContinue', onReverse(true));
    server.on('upgrade', onUpgrade(server, (req) => reverseTarget(entry.base, req.url ?? '')));
    server.on('connect', (_req: IncomingMessage, socket: Duplex) => socket.end('HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n'));
    servers.push(server);
    try {
      const a = await listenOn(server, r.listen.host, r.listen.port);
      entry.address = { ...a, upstream: r.upstream };
    } catch (err) {
      servers.splice(servers.indexOf(server), 1);
      throw err;
    }
    logger.info({ listener: 'proxy-reverse', host: entry.address.host, port: entry.address.port, upstream: new URL(r.upstream).origin }, 'reverse proxy listening');
    return entry;
  }

  /** Stops a reverse listener a reload removed: new connections are refused, open ones finish their exchange. */
  function stopReverse(entry: ReverseEntry, graceMs: number): void {
    servers.splice(servers.indexOf(entry.server), 1);
    entry.server.close();
    entry.server.closeIdleConnections();
    setTimeout(() => entry.server.closeAllConnections(), graceMs).unref();
    logger.info({ listener: 'proxy-reverse', host: entry.address.host, port: entry.address.port }, 'reverse proxy listener removed by reload');
  }

  async function reconfigure(next: ProxyGeneration, commit: () => void): Promise<void> {
    if (shuttingDown) throw new Error('proxy.reload: the proxy is shutting down');
    const previous = routing;
    // Routes a reload adds intercept TLS at once: their leaves need the certificate library now.
    if ((next.config.routes ?? []).length > 0 || caToCreate(next.config.ca, dataDir)) await loadX509();
    if ((next.config.routes ?? []).some((r) => r.grpc)) await loadProtoLibrary();
    const built = buildRouting(next.config, next.engine, next.hold ?? NO_HOLD, previous);
    const dropBuilt = (): void => {
      built.hostAddresses.close();
      if (built.agent !== previous.agent) {
        void built.agent.close();
        void built.h2cAgent.close();
        built.sessions.close();
      }
    };
    // Route host names are looked up before the swap, so the new routes match their addresses at once.
    try {
      await built.hostAddresses.start();
    } catch {
      // A lookup failure leaves names unresolved, as at start; readiness does not wait for them here.
    }
    const wanted = new Map((next.config.reverse ?? []).map((r) => [reverseKey(r), r]));
    const added: [string, ReverseEntry][] = [];
    try {
      for (const [key, r] of wanted) if (!reverseListeners.has(key)) added.push([key, await startReverse(r)]);
    } catch (err) {
      for (const [, entry] of added) stopReverse(entry, 0);
      dropBuilt();
      throw err;
    }
    if (shuttingDown) {
      for (const [, entry] of added) stopReverse(entry, 0);
      dropBuilt();
      throw new Error('proxy.reload: the proxy is shutting down');
    }
    // The swap: routes, exchange, CA and listeners change in this one synchronous step.
    routing = built;
    transparent?.reroute(next.config.routes ?? [], built.routes.table, built.leaves);
    for (const [key, entry] of reverseListeners) {
      if (!wanted.has(key)) {
        reverseListeners.delete(key);
        stopReverse(entry, next.config.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS);
      }
    }
    for (const [key, entry] of added) reverseListeners.set(key, entry);
    reverse.length = 0;
    for (const [key, r] of wanted) {
      const entry = reverseListeners.get(key)!;
      entry.base = reverseBase(r.upstream);
      entry.address = { ...entry.address, upstream: r.upstream };
      reverse.push(entry.address);
    }
    commit();
    previous.hostAddresses.close();
    // undici's close lets requests under way finish.
    if (previous.agent !== built.agent) {
      void previous.agent.close();
      void previous.h2cAgent.close();
      previous.sessions.close();
    }
  }

  const notReadyReason = (): string | undefined => {
    if (shuttingDown) return 'shutting down';
    if (!routing.hostAddresses.ready) return 'route host names are being resolved';
    if (upstreamUnloadable) return 'the upstream client could not be loaded (restart the gateway)';
    return limits.notReadyReason();
  };

  let closing: Promise<void> | undefined;
  return {
    address,
    reverse,
    transparent: transparent?.addresses ?? [],
    get caPem() {
      return routing.ca.certPem;
    },
    ready: () => notReadyReason() === undefined,
    notReadyReason,
    reconfigure,
    close(graceMs = 10_000) {
      closing ??= (async () => {
        shuttingDown = true;
        // Answers not started yet say `Connection: close`: the client does not send again on them.
        for (const res of answering) if (!res.headersSent) res.shouldKeepAlive = false;
        routing.hostAddresses.close();
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
        routing.sessions.close();
        await Promise.all([routing.agent.close(), routing.h2cAgent.close()]);
      })();
      return closing;
    },
  };
}

/** A reverse listener: its server, and the upstream it forwards to (a reload may change it). */
interface ReverseEntry {
  readonly server: Server;
  base: ReturnType<typeof reverseBase>;
  address: { host: string; port: number; upstream: string };
}

/** A reverse listener is the same across reloads when its listen address is (its upstream may change). */
function reverseKey(r: { listen: { host: string; port: number } }): string {
  return `${r.listen.host}:${r.listen.port}`;
}
