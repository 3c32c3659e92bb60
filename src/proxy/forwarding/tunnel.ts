// CONNECT and protocol upgrades. A CONNECT to a host:port some route could match is intercepted:
// TLS is terminated with a leaf minted from the gateway CA and the decrypted HTTP goes to the
// intercept server (HTTP/1.1) or the HTTP/2 reader, as ALPN chose. Any other CONNECT is a blind TCP tunnel. Upgrades are handled in upgrade.ts.

import type { IncomingMessage, Server } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { DpgError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { LeafCertificates } from './ca.ts';
import { isUnspecifiedAddress, readAuthority } from '../reading/canonical-host.ts';
import { isDescriptorShortage } from './connection-limits.ts';
import { problemOf, sendProblemOnSocket } from '../problem.ts';
import type { RouteTable } from '../reading/routes.ts';
import { markUpstreamSide } from './tunnel-drain.ts';
import type { H2Front } from '../http2/h2-front.ts';

/** What ALPN offers the app on an intercepted TLS connection, preferred first. */
export const INTERCEPT_ALPN = ['h2', 'http/1.1'];

/** The CONNECT authority an intercepted connection was opened for. */
export interface TunnelTarget {
  readonly scheme: 'http' | 'https';
  readonly host: string;
  readonly port: number;
  /** Where the tunnel is dialled, when it was fixed before matching (dial-address.ts). */
  readonly address?: string;
}

export interface TunnelDeps {
  readonly routes: RouteTable;
  readonly leaves: LeafCertificates;
  /** An http.Server that never listens: intercepted connections are handed to it. */
  readonly interceptServer: Server;
  /** Reads intercepted TLS connections whose ALPN chose h2 (http2/h2-front.ts). */
  readonly interceptH2: H2Front;
  /** Intercepted sockets → their CONNECT target, read by the intercept server's request handler. */
  readonly targets: WeakMap<object, TunnelTarget>;
  readonly connectTimeoutMs: number;
  readonly logger: Logger;
  /** Tunnels and upgrades, destroyed at once on close (no http.Server tracks them). */
  readonly sockets: Set<Duplex>;
  /** Intercepted connections (the TLS socket, or the raw one for plain HTTP); closed when idle on shutdown. */
  readonly intercepted: Set<Duplex>;
  /** Intercepting TLS socket → the client connection under it (for idle tracking). */
  readonly outer: WeakMap<object, Duplex>;
  /** The address a CONNECT to host:port is dialled at when it must be fixed first (dial-address.ts). */
  readonly pin?: (host: string, port: number) => Promise<string> | undefined;
  /** Told when a blind tunnel's upstream could not be dialled for want of a file descriptor (readiness). */
  readonly onResourceExhausted?: () => void;
}

/**
 * `host:port` of a CONNECT request line (IPv6 in brackets), the host canonical (canonical-host.ts:
 * `2130706433:443` is `127.0.0.1:443`). undefined when malformed.
 */
export function parseAuthority(authority: string | undefined): { host: string; port: number } | undefined {
  return readAuthority(authority);
}

/** A problem for the CONNECT itself: 400 for what we refuse to read, 502 for an unreachable upstream. */
function refuse(socket: Duplex, status: '400 Bad Request' | '502 Bad Gateway', message: string): void {
  sendProblemOnSocket(socket, problemOf(new DpgError(status.startsWith('400') ? 'INVALID_REQUEST' : 'UPSTREAM_UNREACHABLE', message)));
}

/**
 * Adds a socket to a set until it closes. `side`: which end of a relay it is, so that shutdown can
 * tell a request on its way up from an answer on its way back (tunnel-drain.ts).
 */
export function track(set: Set<Duplex>, socket: Duplex, side: 'app' | 'upstream' = 'app'): void {
  set.add(socket);
  if (side === 'upstream') markUpstreamSide(socket);
  socket.once('close', () => set.delete(socket));
}

export function handleConnect(deps: TunnelDeps, req: IncomingMessage, client: Duplex, head: Buffer): void {
  client.on('error', () => client.destroy());
  const target = parseAuthority(req.url);
  if (target === undefined) {
    refuse(client, '400 Bad Request', 'CONNECT needs host:port');
    return;
  }
  if (isUnspecifiedAddress(target.host)) {
    refuse(client, '400 Bad Request', 'CONNECT to an unspecified address (0.0.0.0, ::) is refused');
    return;
  }
  const open = (address: string | undefined): void => {
    const dialled = address === undefined ? target : { ...target, address };
    if (deps.routes.intercepts(target.host, target.port, address)) intercept(deps, client, head, dialled);
    else blindTunnel(deps, client, head, dialled);
  };
  const pinning = deps.pin?.(target.host, target.port);
  if (pinning === undefined) open(undefined);
  else pinning.then(open, () => refuse(client, '502 Bad Gateway', 'The upstream host name could not be resolved'));
}

/**
 * Answers 200, then looks at the first byte: a TLS handshake (0x16) is terminated with the host's
 * leaf certificate; anything else is taken as plain HTTP tunnelled through CONNECT.
 */
function intercept(deps: TunnelDeps, client: Duplex, head: Buffer, target: Omit<TunnelTarget, 'scheme'>): void {
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  // Until its first byte the tunnel is nobody's: closed at shutdown like a tunnel, and at once when
  // the app hangs up (node:http sockets allow half-open connections: an 'end' alone closes nothing).
  track(deps.sockets, client);
  const hungUp = (): void => {
    client.destroy();
  };
  client.once('end', hungUp);
  const start = (first: Buffer): void => {
    client.off('end', hungUp);
    deps.sockets.delete(client);
    client.pause();
    client.unshift(first);
    if (first[0] === 0x16) {
      let context;
      try {
        // The host is canonical: `api.example.` and `api.example` get one leaf, without the dot.
        context = deps.leaves.contextFor(target.host);
      } catch {
        deps.logger.error({ host: target.host }, 'proxy: could not mint a certificate');
        client.destroy();
        return;
      }
      const tls = new TLSSocket(client as Socket, { isServer: true, secureContext: context, ALPNProtocols: INTERCEPT_ALPN });
      tls.on('error', () => tls.destroy());
      track(deps.intercepted, tls);
      deps.outer.set(tls, client);
      // The TLS layer drains what was unshifted and reads the handle itself: no resume() here.
      deps.targets.set(tls, { scheme: 'https', ...target });
      // The protocol is known once the handshake is done: h2 to the HTTP/2 reader, else HTTP/1.1.
      tls.once('secure', () => {
        if (tls.alpnProtocol === 'h2') deps.interceptH2.serve(tls);
        else deps.interceptServer.emit('connection', tls);
      });
    } else {
      track(deps.intercepted, client);
      deps.targets.set(client, { scheme: 'http', ...target });
      deps.interceptServer.emit('connection', client);
      client.resume();
    }
  };
  if (head.length > 0) start(head);
  else client.once('data', start);
}

function blindTunnel(deps: TunnelDeps, client: Duplex, head: Buffer, target: Omit<TunnelTarget, 'scheme'>): void {
  track(deps.sockets, client);
  const upstream = netConnect({ host: target.address ?? target.host, port: target.port });
  track(deps.sockets, upstream, 'upstream');
  let connected = false;
  const timer = setTimeout(() => {
    upstream.destroy();
    refuse(client, '502 Bad Gateway', 'Connecting to the upstream timed out');
  }, deps.connectTimeoutMs);
  upstream.once('connect', () => {
    connected = true;
    clearTimeout(timer);
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', (err) => {
    clearTimeout(timer);
    if (isDescriptorShortage(err)) deps.onResourceExhausted?.();
    if (!connected) refuse(client, '502 Bad Gateway', 'The upstream could not be reached');
    else client.destroy();
  });
  upstream.on('close', () => client.destroy());
  client.on('close', () => {
    clearTimeout(timer);
    upstream.destroy();
  });
}
