// Where a request goes, read once per listener kind: absolute-form on the forward listener,
// origin-form (or absolute-form naming the tunnel itself) inside an intercepted CONNECT tunnel,
// origin-form on a reverse listener. Hosts and paths are canonicalised (canonical-host.ts,
// canonical-path.ts); what stays ambiguous is refused before anything is sent upstream.
// `tunnelTarget` serves any connection whose destination is known before its first request: a
// CONNECT tunnel, or a transparently captured connection (the SNI name or original destination
// address, canonicalised with canonicalHostOf, plus the original port).

import { formatAuthority, isUnspecifiedAddress, readAuthority, type Authority } from './canonical-host.ts';
import { readPath, targetOf, type PathRefusal } from './canonical-path.ts';
import type { Target } from '../exchange/exchange.ts';
import { NO_ALIASES, type HostAliases } from './route-host-addresses.ts';

/** A request the proxy will not read one way: answered with 400, nothing sent upstream. */
export interface TargetRefusal {
  readonly ok: false;
  readonly reason: string;
}

export type TargetReading = { readonly ok: true; readonly target: Target } | TargetRefusal;

const refuse = (reason: string): TargetRefusal => ({ ok: false, reason });
const fromPath = (r: PathRefusal): TargetRefusal => refuse(r.reason);

/** The scheme, authority and origin-form rest of an absolute-form request target. */
export interface AbsoluteForm {
  readonly scheme: 'http' | 'https';
  readonly authority: Authority;
  /** Path and query as sent (`/` when the URL had no path). */
  readonly rest: string;
}

/**
 * Splits `http(s)://authority/path?query` without a URL parser's repairs: the authority ends at the
 * first `/` or `?`, and anything a URL parser would reinterpret (`\`, `#`, userinfo `@`, controls)
 * is refused, so the split is the only reading. The scheme is case-insensitive.
 */
export function readAbsoluteForm(url: string): AbsoluteForm | TargetRefusal {
  const m = /^(https?):\/\//i.exec(url);
  if (!m) return refuse('The request target must be an absolute http:// or https:// URL');
  const scheme = m[1].toLowerCase() as 'http' | 'https';
  if (!/^[\x21-\x7e]*$/.test(url)) return refuse('The request target holds a control, space or non-ASCII byte');
  if (url.includes('\\')) return refuse('The request target holds a backslash');
  if (url.includes('#')) return refuse('The request target holds a fragment (#)');
  const afterScheme = url.slice(m[0].length);
  const end = afterScheme.search(/[/?]/);
  const rawAuthority = end === -1 ? afterScheme : afterScheme.slice(0, end);
  if (rawAuthority.includes('@')) return refuse('The request target holds userinfo (@)');
  const authority = readAuthority(rawAuthority, scheme === 'https' ? 443 : 80);
  if (authority === undefined) return refuse('The request target names no valid host and port');
  let rest = end === -1 ? '/' : afterScheme.slice(end);
  if (rest.startsWith('?')) rest = '/' + rest;
  return { scheme, authority, rest };
}

/** The forward listener: absolute-form only; the Host header sent upstream is the URL's authority. */
export function forwardTarget(url: string): TargetReading {
  const form = readAbsoluteForm(url);
  if ('ok' in form) return form;
  const { scheme, authority } = form;
  if (isUnspecifiedAddress(authority.host)) return refuse('The request target names an unspecified address');
  const path = readPath(form.rest);
  if (!path.ok) return fromPath(path);
  return {
    ok: true,
    target: { scheme, host: authority.host, port: authority.port, path: targetOf(path), hostHeader: formatAuthority(authority.host, authority.port, scheme) },
  };
}

/** What an intercepted connection was opened for (the CONNECT authority, canonical). */
export interface TunnelAuthority {
  readonly scheme: 'http' | 'https';
  readonly host: string;
  readonly port: number;
  /** The address the tunnel was matched and is dialled at, when fixed at CONNECT (dial-address.ts). */
  readonly address?: string;
}

/**
 * True when two canonical hosts are one: equal, or a routed name and one of its addresses
 * (route-host-addresses.ts), so `CONNECT 203.0.113.7:443` may carry `Host: api.example`.
 */
export function sameHost(a: string, b: string, aliases: HostAliases = NO_ALIASES): boolean {
  return a === b || aliases.namesFor(a).includes(b) || aliases.namesFor(b).includes(a);
}

/**
 * A request inside an intercepted tunnel. Origin-form is the usual case. Absolute-form is read
 * when its authority is the tunnel's (after canonicalisation) and refused otherwise: its path is
 * what the upstream would act on. A Host header naming another host than the tunnel is refused:
 * an upstream serving several names (a CDN) would route by it, past the tunnel host's routes.
 * A Host header without a port is taken to mean the tunnel's port.
 */
export function tunnelTarget(url: string, tunnel: TunnelAuthority, hostHeader: string | undefined, aliases: HostAliases = NO_ALIASES): TargetReading {
  let rest = url;
  if (!url.startsWith('/')) {
    const form = readAbsoluteForm(url);
    if ('ok' in form) return form;
    if (!sameHost(form.authority.host, tunnel.host, aliases) || form.authority.port !== tunnel.port) {
      return refuse('An absolute-form request inside a tunnel must name the tunnel\'s own host and port');
    }
    rest = form.rest;
  }
  if (hostHeader !== undefined) {
    const host = readAuthority(hostHeader, tunnel.port);
    if (host === undefined || !sameHost(host.host, tunnel.host, aliases) || host.port !== tunnel.port) {
      return refuse('The Host header names another host than the tunnel');
    }
  }
  const path = readPath(rest);
  if (!path.ok) return fromPath(path);
  const target: Target = { scheme: tunnel.scheme, host: tunnel.host, port: tunnel.port, path: targetOf(path), hostHeader: undefined };
  if (tunnel.address === undefined) return { ok: true, target };
  return { ok: true, target: { ...target, connectTo: { address: tunnel.address, servername: tunnel.scheme === 'https' ? tunnel.host : undefined } } };
}

/** A reverse listener's upstream, read once at start. */
export interface ReverseBase {
  readonly scheme: 'http' | 'https';
  readonly host: string;
  readonly port: number;
  /** Path prefix without a trailing `/` ('' for none). */
  readonly basePath: string;
  /** Host header sent upstream (like nginx's proxy_pass). */
  readonly hostHeader: string;
}

/** Reads a reverse listener's `upstream` URL; throws on a bad one (a start-up error). */
export function reverseBase(upstream: string): ReverseBase {
  const form = readAbsoluteForm(upstream);
  if ('ok' in form) throw new Error(`proxy.reverse upstream ${upstream} must be an http:// or https:// URL (${form.reason})`);
  const path = readPath(form.rest);
  if (!path.ok || path.query !== undefined) throw new Error(`proxy.reverse upstream ${upstream} has a path that cannot be read one way`);
  const { scheme, authority } = form;
  return {
    scheme,
    host: authority.host,
    port: authority.port,
    basePath: path.path.replace(/\/+$/, ''),
    hostHeader: formatAuthority(authority.host, authority.port, scheme),
  };
}

/**
 * A request on a reverse listener: origin-form only (absolute-form is refused: the listener has
 * one upstream). The path is canonicalised before the base path is prefixed, so `..` cannot climb
 * out of the base path.
 */
export function reverseTarget(base: ReverseBase, url: string): TargetReading {
  const path = readPath(url);
  if (!path.ok) return fromPath(path);
  return {
    ok: true,
    target: { scheme: base.scheme, host: base.host, port: base.port, path: base.basePath + targetOf(path), hostHeader: base.hostHeader },
  };
}
