// Protocol upgrades (WebSocket, h2c, …) on every listener. Nothing on an upgraded connection can be
// protected, so a request a route matches is never upgraded, and h2c is served as plain HTTP/1.1.

import type { IncomingMessage, Server } from 'node:http';
import { connect as netConnect, isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, type SecureContext } from 'node:tls';
import { DpgError } from '../../core/errors.ts';
import { isDescriptorShortage } from './connection-limits.ts';
import { originOf, type Target } from '../exchange/exchange.ts';
import { hasRequestBody } from '../exchange/headers.ts';
import { problemOf, sendProblemOnSocket } from '../problem.ts';
import type { RequestFacts, RouteTable } from '../reading/routes.ts';
import { track } from './tunnel.ts';

/**
 * What to do with one upgrade request:
 * - `http1`: an h2c upgrade, which a server may always decline: the Upgrade is dropped and the
 *   request is handled like any other (routed or not). After an h2c switch any number of requests
 *   would share one HTTP/2 connection the proxy cannot read.
 * - `refuse`: a route matches the request, or the request carries a body to a host:port some route
 *   covers: answered here with a problem, nothing is sent upstream.
 * - `splice` `guarded`: the host:port is covered by a route but this request is not: the upstream
 *   must answer 101 before any further client byte goes to it, else the connection is closed on the
 *   next client byte (an HTTP/1.1 connection the proxy no longer parses must not carry more requests).
 * - `splice` open: no route covers the host:port: bytes flow both ways, like a blind tunnel.
 */
export type UpgradeDecision =
  | { readonly kind: 'http1' }
  | { readonly kind: 'refuse'; readonly error: DpgError }
  | { readonly kind: 'splice'; readonly guarded: boolean };

export function decideUpgrade(req: IncomingMessage, target: Target, routes: RouteTable, facts: RequestFacts): UpgradeDecision {
  if (upgradeTokens(req.headers.upgrade).includes('h2c')) return { kind: 'http1' };
  if (routes.match(facts) !== undefined) {
    return {
      kind: 'refuse',
      error: new DpgError('INVALID_REQUEST', 'Protocol upgrades are not supported on routed requests: traffic on an upgraded connection cannot be protected'),
    };
  }
  if (!routes.intercepts(target.host, target.port)) return { kind: 'splice', guarded: false };
  if (hasRequestBody(req.headers)) {
    return {
      kind: 'refuse',
      error: new DpgError('INVALID_REQUEST', 'An upgrade request with a body is not supported to a host a route covers'),
    };
  }
  return { kind: 'splice', guarded: true };
}

function upgradeTokens(header: string | undefined): string[] {
  if (!header) return [];
  return header.split(',').map((t) => t.trim().toLowerCase().split('/')[0]);
}

export interface UpgradeDeps {
  readonly routes: RouteTable;
  readonly connectTimeoutMs: number;
  /** Tunnels and upgrades, destroyed at once on close (no http.Server tracks them). */
  readonly sockets: Set<Duplex>;
  /** Upstream roots with proxy.upstreamCa, parsed once (upstream.ts `upstreamRoots`); undefined: Node's defaults. */
  readonly roots: SecureContext | undefined;
  /** Told when an upstream could not be dialled for want of a file descriptor (readiness). */
  readonly onResourceExhausted?: () => void;
}

/**
 * Handles an http.Server 'upgrade' event. `server` is the server the socket belongs to: an h2c
 * request is replayed into it without its Upgrade headers, so it goes through the normal exchange.
 */
export function handleUpgrade(
  deps: UpgradeDeps,
  server: Server,
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  target: Target,
  facts: RequestFacts,
): void {
  const decision = decideUpgrade(req, target, deps.routes, facts);
  if (decision.kind === 'http1') {
    replayWithoutUpgrade(server, req, client, head);
    return;
  }
  client.on('error', () => client.destroy());
  if (decision.kind === 'refuse') sendProblemOnSocket(client, problemOf(decision.error));
  else spliceUpgrade(deps, req, client, head, target, decision.guarded);
}

const UPGRADE_ONLY = new Set(['upgrade', 'http2-settings']);

/**
 * Puts the request head back on the socket without `Upgrade`, `HTTP2-Settings` and their
 * Connection tokens, and hands the socket to the server again: Node then parses it as an ordinary
 * request (and any pipelined ones after it). Header values are Node-validated latin1 strings.
 */
function replayWithoutUpgrade(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion === '1.0' ? '1.0' : '1.1'}`];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (UPGRADE_ONLY.has(name)) continue;
    if (name === 'connection') {
      const kept = raw[i + 1].split(',').map((t) => t.trim()).filter((t) => t !== '' && !UPGRADE_ONLY.has(t.toLowerCase()));
      if (kept.length > 0) lines.push(`${raw[i]}: ${kept.join(', ')}`);
      continue;
    }
    lines.push(`${raw[i]}: ${raw[i + 1]}`);
  }
  const replay = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');
  socket.unshift(head.length > 0 ? Buffer.concat([replay, head]) : replay);
  server.emit('connection', socket);
}

/** Longest upstream status line we wait for before deciding it is not a 101. */
const MAX_STATUS_LINE = 8 * 1024;

/**
 * Opens a connection to the target, replays the request head and splices bytes both ways.
 * Nothing on it is protected. Guarded: see UpgradeDecision.
 */
function spliceUpgrade(deps: UpgradeDeps, req: IncomingMessage, client: Duplex, head: Buffer, target: Target, guarded: boolean): void {
  track(deps.sockets, client);
  // The transparent listener's targets name the address to dial (connectTo): never a DNS lookup.
  const host = target.connectTo?.address ?? target.host;
  const upstream =
    target.scheme === 'https'
      ? tlsConnect({
          host,
          port: target.port,
          servername: target.connectTo ? target.connectTo.servername : isIP(target.host) === 0 ? target.host : undefined,
          ...(deps.roots ? { secureContext: deps.roots } : {}),
        })
      : netConnect({ host, port: target.port });
  track(deps.sockets, upstream, 'upstream');
  let connected = false;
  const refuseUpstream = (detail: string): void => sendProblemOnSocket(client, problemOf(new DpgError('UPSTREAM_UNREACHABLE', detail)));
  const timer = setTimeout(() => {
    upstream.destroy();
    refuseUpstream('Connecting to the upstream timed out');
  }, deps.connectTimeoutMs);
  if (guarded) client.pause();
  upstream.once(target.scheme === 'https' ? 'secureConnect' : 'connect', () => {
    connected = true;
    clearTimeout(timer);
    upstream.write(requestHead(req, target));
    if (!guarded) {
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
      return;
    }
    awaitSwitch(upstream, client, head);
  });
  upstream.on('error', (err) => {
    clearTimeout(timer);
    if (isDescriptorShortage(err)) deps.onResourceExhausted?.();
    if (!connected) refuseUpstream(`The upstream ${originOf(target)} could not be reached`);
    else client.destroy();
  });
  upstream.on('close', () => client.destroy());
  client.on('close', () => {
    clearTimeout(timer);
    upstream.destroy();
  });
}

function requestHead(req: IncomingMessage, target: Target): string {
  const lines = [`${req.method} ${target.path} HTTP/1.1`];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (name === 'proxy-authorization' || name === 'proxy-connection') continue;
    if (name === 'host' && target.hostHeader !== undefined) continue;
    lines.push(`${raw[i]}: ${raw[i + 1]}`);
  }
  if (target.hostHeader !== undefined) lines.push(`Host: ${target.hostHeader}`);
  return lines.join('\r\n') + '\r\n\r\n';
}

/**
 * Guarded splice: the client stays paused until the upstream's status line is read. 101: the
 * client's early bytes follow and the splice opens. Anything else: the response is relayed, and
 * the first further byte from the client closes both sides instead of reaching the upstream.
 */
function awaitSwitch(upstream: Duplex, client: Duplex, head: Buffer): void {
  const seen: Buffer[] = [];
  let seenBytes = 0;
  const onData = (chunk: Buffer): void => {
    seen.push(chunk);
    seenBytes += chunk.length;
    const sofar = seen.length === 1 ? chunk : Buffer.concat(seen);
    const eol = sofar.indexOf('\r\n');
    if (eol === -1) {
      if (seenBytes > MAX_STATUS_LINE) upstream.destroy();
      return;
    }
    upstream.off('data', onData);
    const switched = /^HTTP\/1\.[01] 101 /.test(sofar.subarray(0, eol).toString('latin1'));
    client.write(sofar);
    upstream.pipe(client);
    if (switched) {
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream);
    } else {
      client.on('data', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.resume();
  };
  upstream.on('data', onData);
}
