// The transparent listener: connections that `dpg capture`'s iptables rules redirected here, with
// no proxy setting in the app. Each one is looked up for its original destination, then decided
// (decide.ts): spliced untouched to that destination, or read as HTTP — in clear, or after TLS
// interception with a leaf from the gateway CA — and every request handed to the proxy's shared
// exchange, which protects what routes cover and always connects to the original destination
// address (never to a DNS lookup of the name the app gave).

import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { connect, createServer as createNetServer, isIP, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import type { ProxyRoute, TransparentConfig } from '../../config/types.ts';
import type { Logger } from '../../core/logger.ts';
import type { LeafCertificates } from '../ca.ts';
import { requestFacts, type Target } from '../exchange.ts';
import { sendProblem } from '../problem.ts';
import { canonicalHost, stripBrackets, type RouteTable } from '../routes.ts';
import { track } from '../tunnel.ts';
import { isTlsHandshake, parseClientHello } from './client-hello.ts';
import { canonicalAddress, RouteCoverage } from './coverage.ts';
import { decideOnAccept, decidePlain, decideTls, type Decision, type DecisionContext } from './decide.ts';
import { peekHttpHead } from './http-head.ts';
import { loadOriginalDestinationReader, type OriginalDestination, type OriginalDestinationReader } from './original-destination.ts';
import { connectUpstream, relay, type SpliceOptions } from './splice.ts';

export interface TransparentDeps {
  readonly config: TransparentConfig;
  readonly routes: readonly ProxyRoute[];
  readonly table: RouteTable;
  readonly leaves: LeafCertificates;
  readonly connectTimeoutMs: number;
  readonly logger: Logger;
  /** Serves one request once its target is known: the proxy's exchange, Expect handling and shutdown accounting. */
  readonly serve: (req: IncomingMessage, res: ServerResponse, target: Target, expectsContinue: boolean) => void;
  /** The proxy's upgrade handling, for a server of ours and our way of finding a request's target. */
  readonly onUpgrade: (server: HttpServer, targetOf: (req: IncomingMessage) => Target | undefined) => (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Spliced connections: destroyed at once when the proxy closes. */
  readonly sockets: Set<Duplex>;
  /** Connections read as HTTP: closed once idle when the proxy closes. */
  readonly intercepted: Set<Duplex>;
  /** Tests without a kernel redirect inject their own; default: SO_ORIGINAL_DST through koffi. */
  readonly originalDestination?: OriginalDestinationReader;
  /** Tests: name resolution of route hosts. */
  readonly resolve?: (name: string) => Promise<string[]>;
}

export interface RunningTransparent {
  readonly addresses: readonly { host: string; port: number }[];
  close(): Promise<void>;
}

/** What the HTTP side needs to know about a connection it reads. */
interface ConnectionInfo {
  readonly scheme: 'http' | 'https';
  readonly dst: OriginalDestination;
  /** The TLS server name the app asked for (https only). */
  readonly serverName: string | undefined;
}

/** A first flight larger than this without a decision is not something we can read. */
const MAX_PEEK_BYTES = 80 * 1024;
/** Request heads beyond Node's default header limit are refused by the HTTP parser anyway. */
const MAX_HEAD_BYTES = 16 * 1024;

export async function startTransparent(deps: TransparentDeps): Promise<RunningTransparent> {
  const { config, table, leaves, logger } = deps;
  const readOriginal = deps.originalDestination ?? (await loadOriginalDestinationReader());
  const coverage = new RouteCoverage(deps.routes, logger, deps.resolve);
  await coverage.start(config.resolveIntervalMs);
  const ctx: DecisionContext = { coverage, intercepts: (h, p) => table.intercepts(h, p), encryptedClientHello: config.encryptedClientHello };
  const spliceOptions: SpliceOptions = { connectTimeoutMs: deps.connectTimeoutMs, idleTimeoutMs: config.idleTimeoutMs };
  const connections = new WeakMap<object, ConnectionInfo>();
  /** Our own probe connections while the start-up loop check runs. */
  const probes = new Map<Socket, () => void>();

  // Decrypted or plain HTTP of redirected connections; never listens itself.
  const http = createHttpServer({ keepAliveTimeout: 30_000 });
  const targetOf = (req: IncomingMessage): Target | undefined => {
    const info = connections.get(req.socket);
    return info && requestTarget(req, info, table, coverage);
  };
  const onRequest = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const problem = hostProblem(req);
    const target = problem === undefined ? targetOf(req) : undefined;
    if (!target) {
      const detail = problem ?? 'The request target must be origin-form or an absolute http(s) URL';
      sendProblem(res, { status: 400, code: 'INVALID_REQUEST', title: 'Invalid request', detail }, undefined, true);
      return;
    }
    deps.serve(req, res, target, expectsContinue);
  };
  http.on('request', onRequest(false));
  http.on('checkContinue', onRequest(true));
  http.on('upgrade', deps.onUpgrade(http, targetOf));

  const refuse = (socket: Socket, dst: OriginalDestination | undefined, reason: string): void => {
    logger.warn({ listener: 'transparent', dst: dst && `${dst.address}:${dst.port}`, reason }, 'transparent proxy: connection refused');
    socket.resetAndDestroy();
  };

  const splice = (client: Socket, dst: OriginalDestination, first: Buffer | undefined, upstream?: Socket): void => {
    const up = upstream ?? connectUpstream(dst, spliceOptions);
    track(deps.sockets, client);
    track(deps.sockets, up);
    relay(client, up, first, spliceOptions);
  };

  const toHttp = (client: Socket, dst: OriginalDestination, first: Buffer): void => {
    client.unshift(first);
    track(deps.intercepted, client);
    connections.set(client, { scheme: 'http', dst, serverName: undefined });
    http.emit('connection', client);
    client.resume();
  };

  const intercept = (client: Socket, dst: OriginalDestination, first: Buffer, decision: Extract<Decision, { action: 'intercept' }>): void => {
    let context;
    try {
      context = leaves.contextFor(decision.leafName);
    } catch {
      refuse(client, dst, 'could not mint a certificate');
      return;
    }
    client.unshift(first);
    const tls = new TLSSocket(client, { isServer: true, secureContext: context, ALPNProtocols: ['http/1.1'] });
    tls.on('error', () => tls.destroy());
    track(deps.intercepted, tls);
    connections.set(tls, { scheme: 'https', dst, serverName: decision.serverName });
    // The TLS layer drains what was unshifted and reads the handle itself: no resume() here.
    http.emit('connection', tls);
  };

  /**
   * Reads the client's first bytes until a decision. A client that stays silent past the peek time
   * (server-first protocols) gets its upstream connected and the server's bytes relayed, while its
   * own first bytes are still decided on; once the server has spoken, only a splice is possible.
   */
  const peek = (client: Socket, dst: OriginalDestination): void => {
    let buffered: Buffer = Buffer.alloc(0);
    let early: Socket | undefined;
    let serverSpoke = false;
    const timer = setTimeout(() => {
      if (buffered.length > 0) return; // a slow client mid-hello: keep reading
      early = connectUpstream(dst, spliceOptions);
      early.on('error', () => client.resetAndDestroy());
      early.on('data', (chunk: Buffer) => {
        serverSpoke = true;
        client.write(chunk);
      });
    }, config.peekTimeoutMs);
    const finish = (): void => {
      clearTimeout(timer);
      client.off('data', onData);
      client.off('close', onClose);
      client.pause();
    };
    const onClose = (): void => {
      clearTimeout(timer);
      early?.destroy();
    };
    const onData = (chunk: Buffer): void => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      let decision = isTlsHandshake(buffered) ? decideTls(ctx, dst, parseClientHello(buffered)) : decidePlain(ctx, dst, peekHttpHead(buffered, MAX_HEAD_BYTES));
      if (decision.action === 'peek' && buffered.length > MAX_PEEK_BYTES) decision = { action: 'refuse', reason: 'first flight too large to read' };
      if (decision.action === 'peek') return;
      finish();
      if (early && (decision.action === 'http' || decision.action === 'intercept')) {
        if (serverSpoke) decision = { action: 'refuse', reason: 'the server spoke first on a connection a route covers' };
        else early.destroy();
      }
      logger.debug({ listener: 'transparent', dst: `${dst.address}:${dst.port}`, action: decision.action }, 'transparent proxy: connection');
      switch (decision.action) {
        case 'splice':
          if (early) early.removeAllListeners('data').removeAllListeners('error');
          splice(client, dst, buffered, early);
          client.resume();
          return;
        case 'refuse':
          early?.destroy();
          refuse(client, dst, decision.reason);
          return;
        case 'http':
          toHttp(client, dst, buffered);
          return;
        case 'intercept':
          intercept(client, dst, buffered, decision);
          return;
      }
    };
    client.on('data', onData);
    client.on('close', onClose);
    client.setTimeout(config.idleTimeoutMs, () => client.destroy());
  };

  const onConnection = (client: Socket): void => {
    client.on('error', () => client.destroy());
    if (probes.size > 0) {
      for (const [probe, looped] of probes) {
        if (probe.localPort !== client.remotePort || probe.localAddress !== client.remoteAddress) continue;
        looped();
        client.destroy();
        return;
      }
    }
    let dst: OriginalDestination | undefined;
    try {
      dst = readOriginal(client);
    } catch (err) {
      logger.error({ listener: 'transparent', errno: (err as { errno?: number }).errno }, 'transparent proxy: could not read the original destination');
    }
    if (dst === undefined) {
      // Not redirected (a direct connection to the listener): there is nowhere to send it.
      refuse(client, undefined, 'not a redirected connection');
      return;
    }
    const decision = decideOnAccept(ctx, dst);
    if (decision.action === 'splice') {
      splice(client, dst, undefined);
      return;
    }
    peek(client, dst);
  };

  const servers: NetServer[] = [];
  const addresses: { host: string; port: number }[] = [];
  const closeAll = async (): Promise<void> => {
    coverage.stop();
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  };
  try {
    const first = await listen(onConnection, config.listen.host, config.listen.port);
    servers.push(first.server);
    addresses.push(first.address);
    if (config.ipv6 && isIP(stripBrackets(config.listen.host)) === 4) {
      try {
        const twin = await listen(onConnection, '::1', first.address.port);
        servers.push(twin.server);
        addresses.push(twin.address);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code !== 'EADDRNOTAVAIL' && code !== 'EAFNOSUPPORT') throw err;
        logger.info({ listener: 'transparent' }, 'transparent proxy: no IPv6 loopback here; IPv4 only');
      }
    }
    await checkNotCaptured(deps.routes, first.address.port, probes);
  } catch (err) {
    logger.error({ listener: 'transparent', error: (err as Error).message }, 'transparent proxy: could not start');
    await closeAll();
    throw err;
  }
  for (const a of addresses) logger.info({ listener: 'transparent', host: a.host, port: a.port }, 'transparent proxy listening');
  return { addresses, close: closeAll };
}

function listen(onConnection: (socket: Socket) => void, host: string, port: number): Promise<{ server: NetServer; address: { host: string; port: number } }> {
  const server = createNetServer({ allowHalfOpen: true, noDelay: true }, onConnection);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, stripBrackets(host), () => {
      server.off('error', reject);
      const a = server.address() as AddressInfo;
      resolve({ server, address: { host: a.address, port: a.port } });
    });
  });
}

/**
 * Where one request goes. The host routes are matched on is the first of these that some route
 * matches: the Host header (or absolute-form authority), the TLS server name, then the routed names
 * the original destination address belongs to. So a request is protected when ANY name it could be
 * read as is routed. The connection always goes to the original destination address, TLS verified
 * against the server name the app sent.
 */
export function requestTarget(req: IncomingMessage, info: ConnectionInfo, table: RouteTable, coverage: RouteCoverage): Target | undefined {
  let path = req.url ?? '/';
  let authority: string | undefined;
  if (!path.startsWith('/')) {
    const absolute = absoluteForm(path, info.scheme);
    if (absolute === undefined) return undefined;
    ({ path, authority } = absolute);
  }
  const hostHeader = hostOf(req.headers.host);
  const candidates = [authority, hostHeader, info.serverName, ...coverage.namesOf(info.dst.address)].filter((c): c is string => c !== undefined);
  const base: Target = {
    scheme: info.scheme,
    host: candidates[0] ?? info.dst.address,
    port: info.dst.port,
    path,
    connectTo: { address: info.dst.address, servername: info.scheme === 'https' ? info.serverName : undefined },
  };
  const facts = requestFacts(req, base);
  for (const c of candidates) {
    const host = canonicalHost(c);
    if (table.match({ ...facts, host }) !== undefined) return host === base.host ? base : { ...base, host };
  }
  return base;
}

/** `http://host[:port]/path` of a request line sent to an origin: its authority and origin-form path. */
function absoluteForm(url: string, scheme: 'http' | 'https'): { path: string; authority: string } | undefined {
  if (!url.toLowerCase().startsWith(`${scheme}://`)) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const rest = url.slice(scheme.length + 3);
  const slash = rest.search(/[/?]/);
  let path = slash === -1 ? '/' : rest.slice(slash);
  if (path.startsWith('?')) path = '/' + path;
  const hash = path.indexOf('#');
  if (hash !== -1) path = path.slice(0, hash);
  return { path, authority: stripBrackets(parsed.hostname).toLowerCase() };
}

/**
 * Servers disagree on which of two Host headers counts, and on what a malformed one means: the
 * route is chosen by the Host, so either is refused rather than guessed.
 */
function hostProblem(req: IncomingMessage): string | undefined {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].length === 4 && req.rawHeaders[i].toLowerCase() === 'host') count++;
  if (count > 1) return 'More than one Host header';
  if (count === 1 && hostOf(req.headers.host) === undefined) return 'The Host header is not a host[:port]';
  return undefined;
}

/** The host of a Host header value, lower case, without port or brackets. */
function hostOf(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))(?::\d{0,5})?$/.exec(value.trim());
  if (!m) return undefined;
  const host = (m[1] ?? m[2]).toLowerCase();
  return canonicalAddress(host) ?? host;
}

/**
 * Fails the start when the gateway's own connections are captured (it does not run as the UID the
 * capture rules exempt): each of them would come back to this listener, forever. One connection per
 * candidate port to this host's first non-loopback address; if one arrives here, the rules loop.
 */
async function checkNotCaptured(routes: readonly ProxyRoute[], listenPort: number, probes: Map<Socket, () => void>): Promise<void> {
  const address = Object.values(networkInterfaces())
    .flat()
    .find((i) => i !== undefined && !i.internal && i.family === 'IPv4');
  if (!address) return;
  const named = [...new Set(routes.map((r) => r.match?.port).filter((p): p is number => p !== undefined))];
  const ports = (named.length > 0 ? named : [443, 80]).filter((p) => p !== listenPort).slice(0, 4);
  const looped = await Promise.all(
    ports.map(
      (port) =>
        new Promise<boolean>((resolve) => {
          const socket = connect({ host: address.address, port });
          const done = (value: boolean): void => {
            clearTimeout(timer);
            probes.delete(socket);
            socket.destroy();
            resolve(value);
          };
          const timer = setTimeout(() => done(false), 500);
          probes.set(socket, () => done(true));
          socket.once('error', () => done(false));
          // Connected elsewhere: give our listener a moment to see it, in case it came here.
          socket.once('connect', () => setTimeout(() => done(false), 50));
        }),
    ),
  );
  if (looped.some(Boolean)) {
    throw new Error(
      `transparent proxy: this process's own connections are redirected back to it (it runs as UID ${process.getuid?.()}); ` +
        'run the gateway as the UID that `dpg capture --proxy-uid` exempts (10001 by default)',
    );
  }
}
