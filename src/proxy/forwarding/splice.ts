// The TCP relay for connections nothing can be protected on: bytes both ways, untouched, half-closes
// passed on (a FIN from one side becomes a FIN to the other), a reset passed on as a reset. The
// upstream is the original destination address itself: never a DNS name. Idle connections are
// closed by the proxy's idle sweeper (proxy.idleTimeoutMs), which watches the app's side.

import { connect, type Socket } from 'node:net';
import type { OriginalDestination } from '../../core/original-destination.ts';
import { isDescriptorShortage } from './connection-limits.ts';

export interface SpliceOptions {
  readonly connectTimeoutMs: number;
  /** Told when a dial fails for want of file descriptors, so readiness reports it (connection-limits.ts). */
  readonly onResourceExhausted?: () => void;
}

/** Opens the upstream connection; the caller decides when bytes start to flow (see relay). */
export function connectUpstream(dst: OriginalDestination, options: SpliceOptions): Socket {
  const upstream = connect({ host: dst.address, port: dst.port, family: dst.family, allowHalfOpen: true, noDelay: true });
  upstream.setTimeout(options.connectTimeoutMs);
  upstream.once('connect', () => upstream.setTimeout(0));
  upstream.once('error', (err) => {
    if (isDescriptorShortage(err)) options.onResourceExhausted?.();
  });
  return upstream;
}

/**
 * Relays `client` ⇄ `upstream`, writing `first` (bytes already read from the client) ahead of the
 * rest. Until the upstream connects, failures reset the client: the app sees what a refused or
 * unreachable destination would have given it, not a silently closed connection.
 */
export function relay(client: Socket, upstream: Socket, first: Buffer | undefined): void {
  if (first !== undefined && first.length > 0) upstream.write(first);
  client.pipe(upstream);
  upstream.pipe(client);
  const reset = (socket: Socket): void => {
    if (!socket.destroyed) socket.resetAndDestroy();
  };
  client.on('error', () => reset(upstream));
  upstream.on('error', () => reset(client));
  upstream.on('timeout', () => {
    // The connect timeout (connectUpstream): the app gets a reset.
    reset(client);
    upstream.destroy();
  });
  client.on('close', () => {
    if (!upstream.destroyed) upstream.destroy();
  });
  upstream.on('close', (hadError) => {
    if (hadError) reset(client);
    else if (!client.destroyed) {
      // Nothing more can reach the upstream: finish what is queued for the client, then close.
      client.once('finish', () => client.destroy());
      client.end();
    }
  });
}
