// The request-level relay: plain HTTP/1.x on a covered port whose requests name unrouted hosts.
// Each request head is read (http-head.ts) and decided on by its own Host before a byte of it goes
// upstream; a clear, unrouted one is written upstream as it came, its body (Content-Length) after
// it byte for byte, and the head after that is read in turn. Nothing is spliced after the first
// head: a keep-alive connection that carries an unrouted request, then one for a routed host (Node's
// `http.Agent({ keepAlive: true })` talking to an ingress by address), has the second one read.
//
// The first head that may not be relayed (routed, unclear, an Upgrade) hands the rest of the
// connection to the full HTTP path, once every relayed request has its whole response
// (response-framing.ts) — the app must not get two answers interleaved. If the responses cannot be
// framed, the connection is reset instead: refused, never passed.
//
// What it costs over a splice: per request, one scan of its head (linear, no allocation beyond the
// head's string for the Host) and of the response's head and chunk-size lines; body bytes are
// counted, not copied or parsed. The upstream connection stays the app's own (one per app
// connection, kept alive as the app keeps it), unlike the full path's pooled re-issue.

import type { Socket } from 'node:net';
import type { HeadResult } from './http-head.ts';
import { ResponseFraming } from './response-framing.ts';

export interface RelayHooks {
  /** Reads the next head (need-more while incomplete). */
  readonly read: (data: Buffer) => HeadResult;
  /** True when this head may be relayed: clear, unrouted, no Upgrade. */
  readonly relayable: (head: HeadResult) => boolean;
  /** The connection leaves the relay: `rest` (from the head that may not be relayed on) goes to the full path. */
  readonly toHttp: (client: Socket, rest: Buffer) => void;
  readonly refuse: (client: Socket, reason: string) => void;
  /** Longest head waited for before it is handed to the full path (which refuses what it must). */
  readonly maxHead: number;
}

/** Relays `client` ⇄ `upstream` request by request; `first` holds the app's bytes read so far. */
export function relayRequests(client: Socket, upstream: Socket, first: Buffer, hooks: RelayHooks): void {
  const framing = new ResponseFraming();
  let pending: Buffer = first;
  let bodyLeft = 0;
  let leaving = false;
  let upstreamClosed = false;

  const backpressure = (from: Socket, to: Socket): void => {
    from.pause();
    to.once('drain', () => {
      if (!leaving || from === upstream) from.resume();
    });
  };

  const send = (bytes: Buffer): void => {
    if (!upstream.write(bytes)) backpressure(client, upstream);
  };

  /** Leaves the relay once the responses are complete (now, or when they are). */
  const leave = (): void => {
    leaving = true;
    client.off('data', onClientData);
    client.off('end', onClientEnd);
    client.pause();
    tryLeave();
  };
  const tryLeave = (): void => {
    if (!leaving) return;
    if (framing.idle || (framing.untilClose && upstreamClosed)) {
      leaving = false;
      upstream.off('data', onUpstreamData);
      upstream.off('close', onUpstreamClose);
      upstream.off('end', onUpstreamEnd);
      upstream.destroy();
      hooks.toHttp(client, pending);
    } else if (framing.lost || upstreamClosed) {
      leaving = false;
      upstream.off('data', onUpstreamData);
      upstream.off('close', onUpstreamClose);
      upstream.off('end', onUpstreamEnd);
      upstream.destroy();
      hooks.refuse(client, 'the relayed responses could not be framed; a later request on the connection needs the full HTTP path');
    }
  };

  const pump = (): void => {
    while (pending.length > 0 && !leaving) {
      if (bodyLeft > 0) {
        const n = Math.min(bodyLeft, pending.length);
        send(pending.subarray(0, n));
        pending = pending.subarray(n);
        bodyLeft -= n;
        continue;
      }
      const head = hooks.read(pending);
      if (head.kind === 'need-more' && pending.length <= hooks.maxHead) return;
      if (head.kind !== 'http' || !head.clear || !hooks.relayable(head)) {
        leave();
        return;
      }
      framing.expect(head.method);
      send(pending.subarray(0, head.headLength));
      pending = pending.subarray(head.headLength);
      bodyLeft = head.bodyLength;
    }
  };

  const onClientData = (chunk: Buffer): void => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    pump();
  };
  // The app half-closed: passed on once what it sent is relayed (a head it never finished is dropped).
  const onClientEnd = (): void => {
    if (!leaving) upstream.end();
  };
  const onUpstreamData = (chunk: Buffer): void => {
    framing.feed(chunk);
    if (!client.write(chunk)) backpressure(upstream, client);
    tryLeave();
  };
  const onUpstreamEnd = (): void => onUpstreamClose(false);
  /** The upstream closed or half-closed (`hadError`: reset). */
  const onUpstreamClose = (hadError: boolean): void => {
    if (upstreamClosed) return;
    upstreamClosed = true;
    if (leaving && !hadError) {
      tryLeave();
      return;
    }
    if (hadError) {
      if (!client.destroyed) client.resetAndDestroy();
      return;
    }
    // Nothing more can reach the upstream: finish what is queued for the app, then close.
    client.off('data', onClientData);
    client.once('finish', () => {
      client.destroy();
      upstream.destroy();
    });
    client.end();
  };

  client.on('data', onClientData);
  client.on('end', onClientEnd);
  client.on('error', () => {
    if (!upstream.destroyed) upstream.resetAndDestroy();
  });
  client.on('close', () => {
    if (!upstream.destroyed) upstream.destroy();
  });
  upstream.on('data', onUpstreamData);
  upstream.on('close', onUpstreamClose);
  // A FIN from the upstream (Connection: close) ends its side like a close: no request can follow.
  upstream.on('end', onUpstreamEnd);
  upstream.on('error', () => undefined);
  upstream.on('timeout', () => {
    // The connect timeout (connectUpstream): the app gets a reset.
    client.resetAndDestroy();
    upstream.destroy();
  });
  pump();
  if (!leaving) client.resume();
}
