// What to do with one redirected connection, as pure functions of what has been seen of it: its
// original destination, then (only on destinations a route could concern) its first bytes.
//
//   destination no route can concern ─────────────────────────────► splice from the first byte
//   TLS ClientHello ── server name or address routed ─────────────► intercept (leaf from the CA)
//                    └ otherwise ─────────────────────────────────► splice (the upstream's own certificate)
//   HTTP/1.x as any server could read it ── not clear ────────────► HTTP: Node's strict parser reads
//     (http-head.ts, lenient)            ├ Host or address routed ─► it, routes and protects every
//                                        │                           request, or refuses it (400)
//                                        └ clear, host unrouted ───► splice (byte-equal)
//   h2c preface, clearly another protocol ── address routed ──────► refuse (nothing can be protected)
//                                          └ otherwise ───────────► splice
//   malformed ClientHello ────────────────────────────────────────► refuse
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
  | { readonly action: 'peek' };

export interface DecisionContext {
  readonly coverage: DestinationCoverage;
  /** The route table's question: could some route match requests to this host and port? */
  readonly intercepts: (host: string, port: number) => boolean;
  /** What to do with a ClientHello that hides its real server name (ECH) when nothing else routes it. */
  readonly encryptedClientHello: 'refuse' | 'splice';
}

/** On accept, from the destination alone. */
export function decideOnAccept(ctx: DecisionContext, dst: OriginalDestination): Decision {
  return ctx.coverage.covers(dst.address, dst.port) ? { action: 'peek' } : { action: 'splice', reason: 'no route covers the destination' };
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
  if (routed(ctx, dst, [hello.serverName])) {
    return { action: 'intercept', serverName: hello.serverName, leafName: hello.serverName === undefined ? dst.address : canonicalHost(hello.serverName) };
  }
  if (hello.encryptedClientHello && ctx.encryptedClientHello === 'refuse') {
    return { action: 'refuse', reason: 'encrypted ClientHello hides the server name on a port routes cover' };
  }
  return { action: 'splice', reason: 'TLS server name not routed' };
}

export function decidePlain(ctx: DecisionContext, dst: OriginalDestination, head: HeadResult): Decision {
  switch (head.kind) {
    case 'need-more':
      return { action: 'peek' };
    case 'http':
      if (!head.clear || routed(ctx, dst, [head.host])) return { action: 'http' };
      return { action: 'splice', reason: 'HTTP host not routed' };
    case 'h2-preface':
      return routed(ctx, dst, []) ? { action: 'refuse', reason: 'HTTP/2 prior knowledge to a routed destination' } : { action: 'splice', reason: 'HTTP/2 prior knowledge, destination not routed' };
    case 'not-http':
      return routed(ctx, dst, []) ? { action: 'refuse', reason: 'a protocol other than HTTP or TLS to a routed destination' } : { action: 'splice', reason: 'not HTTP' };
  }
}
