// The transparent listener: connections that `dpg capture`'s iptables rules redirected here, with
// no proxy setting in the app. Each one is looked up for its original destination, then decided
// (decide.ts): spliced untouched to that destination; relayed request by request while its plain
// HTTP requests name unrouted hosts (request-relay.ts); relayed stream by stream when it is h2c to
// an unrouted address (h2c.ts); or read as HTTP (HTTP/1.1, or HTTP/2 by ALPN or prior knowledge) — in clear, or after TLS interception with a leaf from the gateway CA —
// and every request handed to the proxy's shared exchange, which protects what routes cover and
// always connects to the original destination address (never to a DNS lookup of the name the app
// gave). Every request on a connection that could concern a route is read (DESIGN §9).

import { listenOn } from '../../core/listen.ts';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { connect, createServer as createNetServer, isIP, type Server as NetServer, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import type { ProxyRoute, TransparentConfig } from '../../config/types.ts';
import type { Logger } from '../../core/logger.ts';
import { StartupError } from '../../core/errors.ts';
import type { LeafCertificates } from '../forwarding/ca.ts';
import { canonicalHostOf, readAuthority } from '../reading/canonical-host.ts';
import { readPath, targetOf } from '../reading/canonical-path.ts';
import { requestFacts, type Target } from '../exchange/exchange.ts';
import { readAbsoluteForm, type TargetReading } from '../reading/request-target.ts';
import { stripBrackets, type RouteTable } from '../reading/routes.ts';
import { INTERCEPT_ALPN, track } from '../forwarding/tunnel.ts';
import { connectionOf, createH2Front, isH2Request } from '../http2/h2-front.ts';
import { isTlsHandshake, parseClientHello } from './client-hello.ts';
import { RouteCoverage } from './coverage.ts';
import { decideH2cStream, decideOnAccept, decidePlain, decideTls, relayable, type Decision, type DecisionContext } from './decide.ts';
import { peekHttpHead } from './http-head.ts';
import { loadOriginalDestinationReader, type OriginalDestination, type OriginalDestinationReader } from '../../core/original-destination.ts';
import { connectUpstream, relay, type SpliceOptions } from '../forwarding/splice.ts';
import { relayRequests } from './request-relay.ts';
import { relayH2c } from './h2c.ts';

export interface TransparentDeps {
  readonly config: TransparentConfig;
  readonly routes: readonly ProxyRoute[];
  /** The proxy's route table (it counts an address of a routed name as that name). */
  readonly table: RouteTable;
  readonly leaves: LeafCertificates;
  readonly connectTimeoutMs: number;
  /** Told when a spliced connection's dial fails for want of file descriptors (readiness). */
  readonly onResourceExhausted?: () => void;
  readonly logger: Logger;
  /** Serves one request once its target is read: the proxy's exchange, Expect handling, shutdown accounting. */
  readonly serve: (req: IncomingMessage, res: ServerResponse, reading: TargetReading, expectsContinue: boolean) => void;
  /** False when the door is saturated (docs/operations.md#overload): the new connection is reset, never spliced unread. */
  readonly admitConnection?: () => boolean;
  /** The proxy's upgrade handling, for a server of ours and our way of reading a request's target. */
  readonly onUpgrade: (server: HttpServer, read: (req: IncomingMessage) => TargetReading | undefined) => (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** The proxy's answer to a request node:http could not parse. */
  readonly onClientError: (err: NodeJS.ErrnoException, socket: Duplex) => void;
  /** Puts a listener under the proxy's connection cap, readiness and idle sweeping. */
  readonly guard: (server: NetServer, name: string) => void;
  /** Spliced and relayed connections: closed between exchanges when the proxy closes (tunnel-drain.ts). */
  readonly sockets: Set<Duplex>;
  /** Connections read as HTTP: closed once idle when the proxy closes. */
  readonly intercepted: Set<Duplex>;
  /** Intercepting TLS socket → the connection under it (the proxy counts exchanges per raw connection). */
  readonly outer: WeakMap<object, Duplex>;
  /** Tests without a kernel redirect inject their own; default: SO_ORIGINAL_DST through koffi. */
  readonly originalDestination?: OriginalDestinationReader;
}

export interface RunningTransparent {
  readonly addresses: readonly { host: string; port: number }[];
  /** A reload's routes and CA: connections accepted from now on are decided and intercepted with them. */
  reroute(routes: readonly ProxyRoute[], table: RouteTable, leaves: LeafCertificates): void;
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
  const { config, logger } = deps;
  // Replaced by reroute() on a reload; each connection reads them when it is decided.
  let { table, leaves } = deps;
  let coverage = new RouteCoverage(deps.routes);
  const readOriginal = deps.originalDestination ?? (await loadOriginalDestinationReader());
  const ctx: DecisionContext = {
    get coverage() {
      return coverage;
    },
    intercepts: (h, p) => table.intercepts(h, p), encryptedClientHello: config.encryptedClientHello, inspect: config.inspect };
  const spliceOptions: SpliceOptions = { connectTimeoutMs: deps.connectTimeoutMs, onResourceExhausted: deps.onResourceExhausted };
  const connections = new WeakMap<object, ConnectionInfo>();
  /** Our own probe connections while the start-up loop check runs. */
  const probes = new Map<Socket, () => void>();

  // Decrypted or plain HTTP of redirected connections; never listens itself.
  const http = createHttpServer({ keepAliveTimeout: 30_000 });
  http.on('clientError', deps.onClientError);
  const read = (req: IncomingMessage): TargetReading | undefined => {
    const info = connections.get(connectionOf(req));
    return info && requestTarget(req, info, table);
  };
  const onRequest = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const reading = read(req);
    if (!reading) {
      res.destroy();
      return;
    }
    deps.serve(req, res, reading, expectsContinue);
  };
  http.on('request', onRequest(false));
  http.on('checkContinue', onRequest(true));
  http.on('upgrade', deps.onUpgrade(http, read));
  // HTTP/2: TLS whose ALPN chose h2, and h2c with prior knowledge to a routed address.
  const h2 = createH2Front('https', { onRequest: onRequest(false) });
  const h2c = createH2Front('http', { onRequest: onRequest(false) });

  const refuse = (socket: Socket, dst: OriginalDestination | undefined, reason: string): void => {
    logger.warn({ listener: 'transparent', dst: dst && `${dst.address}:${dst.port}`, reason }, 'transparent proxy: connection refused');
    socket.resetAndDestroy();
  };

  const splice = (client: Socket, dst: OriginalDestination, first: Buffer | undefined, upstream?: Socket): void => {
    const up = upstream ?? connectUpstream(dst, spliceOptions);
    track(deps.sockets, client);
    track(deps.sockets, up, 'upstream');
    relay(client, up, first);
  };

  /** Plain HTTP whose first request is unrouted: relayed request by request (request-relay.ts). */
  const relayHttp = (client: Socket, dst: OriginalDestination, first: Buffer): void => {
    const up = connectUpstream(dst, spliceOptions);
    track(deps.sockets, client);
    track(deps.sockets, up, 'upstream');
    relayRequests(client, up, first, {
      read: (data) => peekHttpHead(data, MAX_HEAD_BYTES),
      relayable: (head) => relayable(ctx, dst, head),
      toHttp: (socket, rest) => {
        logger.debug({ listener: 'transparent', dst: `${dst.address}:${dst.port}` }, 'transparent proxy: a later request on a relayed connection takes the full HTTP path');
        toHttp(socket, dst, rest);
      },
      refuse: (socket, reason) => refuse(socket, dst, reason),
      maxHead: MAX_HEAD_BYTES,
    });
  };

  /** HTTP/2 with prior knowledge to an unrouted address: each stream's :authority read (h2c.ts). */
  const relayH2cStreams = (client: Socket, dst: OriginalDestination, first: Buffer): void => {
    const up = connectUpstream(dst, spliceOptions);
    track(deps.sockets, client);
    track(deps.sockets, up, 'upstream');
    relayH2c(client, up, first, {
      decide: (authority) => {
        const host = authority === undefined ? undefined : readAuthority(authority, dst.port)?.host;
        if (authority !== undefined && host === undefined) return 'an HTTP/2 stream names a host that cannot be read';
        const decision = decideH2cStream(ctx, dst, host);
        return decision.action === 'refuse' ? decision.reason : undefined;
      },
      refuse: (socket, reason) => {
        up.destroy();
        refuse(socket, dst, reason);
      },
    });
  };

  const toHttp = (client: Socket, dst: OriginalDestination, first: Buffer): void => {
    deps.sockets.delete(client);
    client.unshift(first);
    track(deps.intercepted, client);
    connections.set(client, { scheme: 'http', dst, serverName: undefined });
    http.emit('connection', client);
    client.resume();
  };

  /** HTTP/2 with prior knowledge to a routed address: every stream read and served like HTTP/1.1. */
  const toH2c = (client: Socket, dst: OriginalDestination, first: Buffer): void => {
    deps.sockets.delete(client);
    client.unshift(first);
    track(deps.intercepted, client);
    connections.set(client, { scheme: 'http', dst, serverName: undefined });
    // The session reads the socket's handle itself, and the unshifted bytes first: no resume() here.
    h2c.serve(client);
  };

  const intercept = (client: Socket, dst: OriginalDestination, first: Buffer, decision: Extract<Decision, { action: 'intercept' }>): void => {
    let context;
    try {
      context = leaves.contextFor(decision.leafName);
    } catch {
      refuse(client, dst, 'could not mint a certificate');
      return;
    }
    deps.sockets.delete(client);
    client.unshift(first);
    const tls = new TLSSocket(client, { isServer: true, secureContext: context, ALPNProtocols: INTERCEPT_ALPN });
    tls.on('error', () => tls.destroy());
    track(deps.intercepted, tls);
    deps.outer.set(tls, client);
    connections.set(tls, { scheme: 'https', dst, serverName: decision.serverName });
    // The TLS layer drains what was unshifted and reads the handle itself: no resume() here. The
    // protocol is known once the handshake is done: h2 to the HTTP/2 reader, else HTTP/1.1.
    tls.once('secure', () => {
      if (tls.alpnProtocol === 'h2') h2.serve(tls);
      else http.emit('connection', tls);
    });
  };

  /**
   * Reads the client's first bytes until a decision. A client that stays silent past the peek time
   * (server-first protocols) gets its upstream connected and the server's bytes relayed, while its
   * own first bytes are still decided on; once the server has spoken, only a splice is possible.
   */
  const peek = (client: Socket, dst: OriginalDestination): void => {
    // Undecided connections are closed at shutdown like tunnels (moved to `intercepted` if read as HTTP).
    track(deps.sockets, client);
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
      client.off('end', onEnd);
      client.off('close', onClose);
      client.pause();
    };
    const onClose = (): void => {
      clearTimeout(timer);
      early?.destroy();
    };
    // The app closed its side before its first bytes could be decided on (an unfinished hello or head).
    const onEnd = (): void => {
      finish();
      early?.destroy();
      client.destroy();
    };
    const onData = (chunk: Buffer): void => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      let decision = isTlsHandshake(buffered) ? decideTls(ctx, dst, parseClientHello(buffered)) : decidePlain(ctx, dst, peekHttpHead(buffered, MAX_HEAD_BYTES));
      if (decision.action === 'peek' && buffered.length > MAX_PEEK_BYTES) decision = { action: 'refuse', reason: 'first flight too large to read' };
      if (decision.action === 'peek') return;
      finish();
      if (early && (decision.action === 'http' || decision.action === 'intercept' || decision.action === 'relay' || decision.action === 'h2c' || decision.action === 'h2')) {
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
        case 'relay':
          relayHttp(client, dst, buffered);
          return;
        case 'h2c':
          relayH2cStreams(client, dst, buffered);
          return;
        case 'h2':
          toH2c(client, dst, buffered);
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
    client.on('end', onEnd);
    client.on('close', onClose);
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
    if (deps.admitConnection?.() === false) {
      // Counted and logged (rate-limited) by the overload gate; a line per connection would add to the load.
      client.resetAndDestroy();
      return;
    }
    let dst: OriginalDestination | undefined;
    try {
      dst = readOriginal(client);
      if (dst !== undefined) dst = { ...dst, address: canonicalHostOf(dst.address) ?? dst.address };
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
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  };
  try {
    const first = await listen(onConnection, deps.guard, config.listen.host, config.listen.port);
    servers.push(first.server);
    addresses.push(first.address);
    if (config.ipv6 && isIP(stripBrackets(config.listen.host)) === 4) {
      // Asked first, so a host without IPv6 does not leave a listener that never listens in readiness.
      if (await ipv6LoopbackAvailable()) {
        const twin = await listen(onConnection, deps.guard, '::1', first.address.port);
        servers.push(twin.server);
        addresses.push(twin.address);
      } else logger.info({ listener: 'transparent' }, 'transparent proxy: no IPv6 loopback here; IPv4 only');
    }
    await checkNotCaptured(deps.routes, first.address.port, probes);
  } catch (err) {
    logger.error({ listener: 'transparent', error: (err as Error).message }, 'transparent proxy: could not start');
    await closeAll();
    throw err;
  }
  for (const a of addresses) logger.info({ listener: 'transparent', host: a.host, port: a.port }, 'transparent proxy listening');
  return {
    addresses,
    close: closeAll,
    reroute(routes, nextTable, nextLeaves) {
      table = nextTable;
      leaves = nextLeaves;
      coverage = new RouteCoverage(routes);
    },
  };
}

/** Whether [::1] can be bound here (IPv6 off in the kernel or the namespace: no). */
function ipv6LoopbackAvailable(): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createNetServer();
    probe.once('error', () => resolve(false));
    probe.listen(0, '::1', () => probe.close(() => resolve(true)));
  });
}

function listen(
  onConnection: (socket: Socket) => void,
  guard: TransparentDeps['guard'],
  host: string,
  port: number,
): Promise<{ server: NetServer; address: { host: string; port: number } }> {
  const server = createNetServer({ allowHalfOpen: true, noDelay: true }, onConnection);
  guard(server, isIP(stripBrackets(host)) === 6 ? 'transparent6' : 'transparent');
  return listenOn(server, stripBrackets(host), port).then((address) => ({ server, address }));
}

/**
 * Where one request goes, read with the proxy's canonical forms (request-target.ts): the path in one
 * spelling (or refused), hosts canonical. The host routes are matched on is the first of these that
 * some route matches: the absolute-form authority, the Host header, the TLS server name, the
 * original destination address (which the route table counts as any routed name it belongs to).
 * So a request is protected when ANY name it can be read as is routed; one that names no host is
 * refused where a route for a name could be its server's default host. The connection always goes
 * to the original destination address, TLS verified against the server name the app sent.
 */
export function requestTarget(req: IncomingMessage, info: ConnectionInfo, table: RouteTable): TargetReading {
  const refuse = (reason: string): TargetReading => ({ ok: false, reason });
  let rest = req.url ?? '/';
  let authority: string | undefined;
  if (!rest.startsWith('/')) {
    const form = readAbsoluteForm(rest);
    if ('ok' in form) return form;
    if (form.scheme !== info.scheme) return refuse(`An absolute-form request on this connection must be ${info.scheme}://`);
    authority = form.authority.host;
    rest = form.rest;
  }
  const path = readPath(rest);
  if (!path.ok) return refuse(path.reason);
  let hostHeader: string | undefined;
  let hosts = 0;
  // HTTP/2: the one host h2-request.ts left in `host` (from :authority, or a Host that agrees with it).
  if (isH2Request(req)) hosts = req.headers.host === undefined ? 0 : 1;
  else for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].length === 4 && req.rawHeaders[i].toLowerCase() === 'host') hosts++;
  // Servers disagree on which of two Host headers counts: the route is chosen by it, so refuse.
  if (hosts > 1) return refuse('More than one Host header');
  if (hosts === 1) {
    const host = readAuthority(req.headers.host, info.dst.port);
    if (host === undefined) return refuse('The Host header is not a valid host[:port]');
    hostHeader = host.host;
  }
  const serverName = info.serverName === undefined ? undefined : canonicalHostOf(info.serverName);
  const candidates = [authority, hostHeader, serverName, info.dst.address].filter((c): c is string => c !== undefined);
  const base: Target = {
    scheme: info.scheme,
    host: candidates[0],
    port: info.dst.port,
    path: targetOf(path),
    connectTo: { address: info.dst.address, servername: info.scheme === 'https' ? info.serverName : undefined },
  };
  const facts = requestFacts(req, base);
  for (const host of candidates) {
    if (table.match({ ...facts, host }) !== undefined) return { ok: true, target: host === base.host ? base : { ...base, host } };
  }
  // No name at all (HTTP/1.0 without Host, TLS without SNI): the server answers as its default
  // host, which may be one a name or wildcard route protects here.
  if (candidates.length === 1 && table.coversUnnamed(facts)) {
    return refuse('The request names no host (no Host header) on a port a route for a host name covers: the server would choose the host');
  }
  return { ok: true, target: base };
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
    throw new StartupError(
      `transparent proxy: this process's own connections are redirected back to it (it runs as UID ${process.getuid?.()}); ` +
        'run the gateway as the UID that `dpg capture --proxy-uid` exempts (10001 by default)',
    );
  }
}
