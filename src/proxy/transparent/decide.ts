// What to do with one redirected connection, as pure functions of what has been seen of it: its
// original destination, then (only on destinations a route could concern) its first bytes, then —
// for plain HTTP — each later request head. DESIGN §9: when in doubt, it is routed, and every
// request on a captured connection is read.
//
//   destination no route can concern ─────────────────────────────► splice from the first byte
//     (inspect: all — any address on a port a route names is concerned)
//   TLS ClientHello ── server name or address routed ─────────────► intercept (leaf from the CA)
//                    ├ no server name (an IP URL) ────────────────► intercept (leaf for the address):
//                    │                                              each request's Host decides
//                    ├ inspect: all ──────────────────────────────► intercept (leaf for the server name)
//                    └ otherwise ─────────────────────────────────► splice (the upstream's own certificate)
//   HTTP/1.x as any server could read it ── not clear ────────────► HTTP: Node's strict parser reads
//     (http-head.ts, lenient)            ├ Host or address routed ─► it, routes and protects every
//                                        ├ Upgrade header ─────────► request, or refuses it (400)
//                                        └ clear, host unrouted ───► relay this request (request-relay.ts),
//                                                                    then read the next head: the same
//                                                                    three branches, every head
//   h2c preface ── address routed ────────────────────────────────► HTTP/2: every stream read, routed
//               │                                                  and protected like HTTP/1.1 (h2-front.ts)
//               └ otherwise: each stream's :authority (h2c.ts) ─┬─► routed or absent: refuse (reset)
//                                                               └─► unrouted: frames pass untouched
//   clearly another protocol ── address routed ───────────────────► refuse
//                             └ otherwise ────────────────────────► splice
//   malformed ClientHello ────────────────────────────────────────► refuse
//
// Inside intercepted TLS the full HTTP path reads every request: its Host (or absolute-form
// authority), the server name and the address each count, the first routed one wins; a request
// routed by none goes on untouched, re-encrypted to the original destination and verified against
// the server name the app sent. ALPN offers h2 and http/1.1: an h2 connection is read stream by
// stream (http2/h2-front.ts) with the same readers.
//
// "Clear" is the one head every server reads alike (one Host, strict request line and headers):
// only then can the gateway know that the upstream will not read a routed host into it. Anything
// that a lenient server might take for a request (any whitespace as separator, odd versions, stray
// CRs, HTTP/0.9, no Host) is read in full instead — on these ports doubt never ends in a splice.
// A client that stays silent (server-speaks-first protocols) gets its upstream connected while the
// gateway keeps waiting for its first bytes; see index.ts.

import { canonicalHost } from '../reading/routes.ts';
import type { HelloResult } from './client-hello.ts';
import type { DestinationCoverage } from './coverage.ts';
import type { HeadResult } from './http-head.ts';
import type { OriginalDestination } from '../../core/original-destination.ts';

export type Decision =
  | { readonly action: 'splice'; readonly reason: string }
  | { readonly action: 'refuse'; readonly reason: string }
  /** TLS terminated here; `leafName` is what the certificate names (the server name, else the address). */
  | { readonly action: 'intercept'; readonly serverName: string | undefined; readonly leafName: string }
  | { readonly action: 'http' }
  /** Plain HTTP/1.x, this request unrouted: relayed as it came, the next head read in turn. */
  | { readonly action: 'relay' }
  /** HTTP/2 with prior knowledge to an unrouted address: each stream's :authority decides. */
  | { readonly action: 'h2c' }
  /** HTTP/2 with prior knowledge to a routed address: read whole, every stream, like HTTP/1.1. */
  | { readonly action: 'h2' }
  | { readonly action: 'peek' };

export interface DecisionContext {
  readonly coverage: DestinationCoverage;
  /** The route table's question: could some route match requests to this host and port? */
  readonly intercepts: (host: string, port: number) => boolean;
  /** What to do with a ClientHello that hides its real server name (ECH) when nothing else routes it. */
  readonly encryptedClientHello: 'refuse' | 'splice';
  /** `all`: every TLS connection on a port a route names is intercepted (proxy.transparent.inspect). */
  readonly inspect: 'routed' | 'all';
}

/** On accept, from the destination alone. */
export function decideOnAccept(ctx: DecisionContext, dst: OriginalDestination): Decision {
  if (ctx.coverage.covers(dst.address, dst.port)) return { action: 'peek' };
  if (ctx.inspect === 'all' && ctx.coverage.coversPort(dst.port)) return { action: 'peek' };
  return { action: 'splice', reason: 'no route covers the destination' };
}

/**
 * True when a route covers any of `names`, or the destination address, on the port. The route
 * table counts an address of a routed name as that name (route-host-addresses.ts).
 */
export function routed(ctx: DecisionContext, dst: OriginalDestination, names: readonly (string | undefined)[]): boolean {
  for (const n of names) if (n !== undefined && ctx.intercepts(canonicalHost(n), dst.port)) return true;
  return ctx.intercepts(dst.address, dst.port);
}

export function decideTls(ctx: DecisionContext, dst: OriginalDestination, hello: HelloResult): Decision {
  if (hello.kind === 'need-more') return { action: 'peek' };
  if (hello.kind === 'invalid') return { action: 'refuse', reason: `unreadable ClientHello (${hello.reason})` };
  const intercept: Decision = { action: 'intercept', serverName: hello.serverName, leafName: hello.serverName === undefined ? dst.address : canonicalHost(hello.serverName) };
  if (routed(ctx, dst, [hello.serverName])) return intercept;
  // No server name: nothing tells which host the requests are for but their Host headers.
  if (hello.serverName === undefined && !hello.encryptedClientHello) return intercept;
  if (ctx.inspect === 'all') return intercept;
  if (hello.encryptedClientHello && ctx.encryptedClientHello === 'refuse') {
    return { action: 'refuse', reason: 'encrypted ClientHello hides the server name on a port routes cover' };
  }
  return { action: 'splice', reason: 'TLS server name not routed' };
}

/** A plain-HTTP head that may be relayed untouched: clear, naming an unrouted host, no Upgrade. */
export function relayable(ctx: DecisionContext, dst: OriginalDestination, head: HeadResult): boolean {
  return head.kind === 'http' && head.clear && !head.upgrade && !routed(ctx, dst, [head.host]);
}

export function decidePlain(ctx: DecisionContext, dst: OriginalDestination, head: HeadResult): Decision {
  switch (head.kind) {
    case 'need-more':
      return { action: 'peek' };
    case 'http':
      return relayable(ctx, dst, head) ? { action: 'relay' } : { action: 'http' };
    case 'h2-preface':
      return routed(ctx, dst, []) ? { action: 'h2' } : { action: 'h2c' };
    case 'not-http':
      return routed(ctx, dst, []) ? { action: 'refuse', reason: 'a protocol other than HTTP or TLS to a routed destination' } : { action: 'splice', reason: 'not HTTP' };
  }
}

/**
 * One HTTP/2 stream on a relayed h2c connection (to an unrouted address), by its :authority (else
 * its Host header). The connection is relayed, not read: a routed stream is refused, and so is one
 * naming no host (its server picks).
 */
export function decideH2cStream(ctx: DecisionContext, dst: OriginalDestination, authority: string | undefined): Decision {
  if (authority === undefined) return { action: 'refuse', reason: 'an HTTP/2 stream names no host on a port routes cover' };
  if (routed(ctx, dst, [authority])) return { action: 'refuse', reason: 'HTTP/2 stream for a routed host on a relayed h2c connection (only h2c to a routed address is read)' };
  return { action: 'splice', reason: 'HTTP/2 stream for an unrouted host' };
}
