// Route matching, compiled once from the `proxy.routes` config: host (exact or `*.` wildcard),
// port, methods, path glob and content type. First match wins.

import type { ProxyRoute, RouteMatch } from '../config/types.ts';
import { canonicalHostOf, ipVersion } from './canonical-host.ts';
import { NO_ALIASES, type HostAliases } from './route-host-addresses.ts';

/** What a request offers to the matcher. `host` is lower case, without brackets or port. */
export interface RequestFacts {
  readonly host: string;
  readonly port: number;
  readonly method: string;
  /** Path without the query string, as sent. */
  readonly path: string;
  /** Media type, lower case, without parameters; '' when absent. */
  readonly contentType: string;
}

type Test<T> = (value: T) => boolean;

export interface CompiledRoute {
  readonly route: ProxyRoute;
  readonly matchesHostPort: (host: string, port: number) => boolean;
  /** `path` already normalised (normalizePath). */
  readonly matchesMethodPath: (method: string, path: string) => boolean;
  readonly matchesContentType: (mediaType: string) => boolean;
  readonly matches: (facts: RequestFacts) => boolean;
}

/** The route responsible for a request, and whether the request's media type is one it names. */
export interface RouteSelection {
  readonly route: ProxyRoute;
  /** False when the route was chosen on host, port, method and path alone (see `select`). */
  readonly contentTypeMatched: boolean;
}

export interface RouteTable {
  /** `select(facts)?.route`: the route responsible for the request, or undefined (pass-through). */
  match(facts: RequestFacts): ProxyRoute | undefined;
  /**
   * The first route matching every criterion; else the first route matching host, port, method
   * and path, whatever the content type (`contentTypeMatched: false`). A route's `contentType`
   * picks among routes; it never lets a request on a routed path go by unread (the exchange
   * reads or refuses such a body, see body-kind.ts). Undefined: no route covers the request.
   */
  select(facts: RequestFacts): RouteSelection | undefined;
  /** True when some route could match requests to this host and port: CONNECT is intercepted. */
  intercepts(host: string, port: number): boolean;
}

/**
 * `aliases` makes an address of a routed host name that host (route-host-addresses.ts): a request
 * to one of its addresses is matched as if it named the host.
 */
export function compileRoutes(routes: readonly ProxyRoute[], aliases: HostAliases = NO_ALIASES): RouteTable {
  const compiled = routes.map(compileRoute);
  /** The route's host and port criteria, for the request's host or a route host name it is an address of. */
  const coversHost = (c: CompiledRoute, host: string, names: readonly string[], port: number): boolean => {
    if (c.matchesHostPort(host, port)) return true;
    for (const name of names) if (c.matchesHostPort(name, port)) return true;
    return false;
  };
  const select = (facts: RequestFacts): RouteSelection | undefined => {
    const host = canonicalHost(facts.host);
    const names = aliases.namesFor(host); // empty unless the host is an address of a routed name
    const path = normalizePath(facts.path);
    let covering: ProxyRoute | undefined;
    for (const c of compiled) {
      if (!coversHost(c, host, names, facts.port) || !c.matchesMethodPath(facts.method, path)) continue;
      if (c.matchesContentType(facts.contentType)) return { route: c.route, contentTypeMatched: true };
      covering ??= c.route;
    }
    return covering === undefined ? undefined : { route: covering, contentTypeMatched: false };
  };
  return {
    select,
    match: (facts) => select(facts)?.route,
    intercepts(host, port) {
      const h = canonicalHost(host);
      const names = aliases.namesFor(h);
      return compiled.some((c) => coversHost(c, h, names, port));
    },
  };
}

/**
 * The host as routes see it (canonical-host.ts): IP literals in one spelling, names in lower case
 * without trailing dots (`api.example.` is the same host to DNS). A host that is not valid at all
 * (listeners refuse those first) is only lower-cased and trimmed of dots.
 */
export function canonicalHost(host: string): string {
  const canonical = canonicalHostOf(host);
  if (canonical !== undefined) return canonical;
  const lower = host.toLowerCase();
  return lower.endsWith('.') ? lower.replace(/\.+$/, '') : lower;
}

export function compileRoute(route: ProxyRoute): CompiledRoute {
  const m: RouteMatch = route.match ?? {};
  const host = compileHost(m.host);
  const port: Test<number> = m.port === undefined ? () => true : (p) => p === m.port;
  const methods = m.methods && m.methods.length > 0 ? new Set(m.methods.map((x) => x.toUpperCase())) : undefined;
  const path = m.path === undefined ? () => true : compilePathGlob(m.path);
  const contentType = compileContentType(m.contentType);
  const matchesHostPort = (h: string, p: number): boolean => host(h) && port(p);
  const matchesMethodPath = (method: string, normalised: string): boolean => (methods === undefined || methods.has(method)) && path(normalised);
  return {
    route,
    matchesHostPort,
    matchesMethodPath,
    matchesContentType: contentType,
    matches: (f) => matchesHostPort(f.host, f.port) && contentType(f.contentType) && matchesMethodPath(f.method, normalizePath(f.path)),
  };
}

/**
 * `api.example` exact (case-insensitive); `*.example` any subdomain at any depth (not `example`
 * itself): wider than TLS wildcards on purpose, matching more means protecting more; `*` any host.
 */
export function compileHost(pattern: string | undefined): Test<string> {
  if (pattern === undefined || pattern === '*') return () => true;
  if (pattern.startsWith('*.')) {
    const suffix = '.' + canonicalHost(pattern.slice(2));
    return (h) => h.length > suffix.length && h.endsWith(suffix);
  }
  // `127.1`, `[::ffff:127.0.0.1]`, `API.Example.` in the config: the same canonical form as requests.
  const p = canonicalHost(pattern);
  return (h) => h === p;
}

/** A route's host pattern is valid: `*`, `*.` + a host name, or a host (name or IP literal). */
export function isValidHostPattern(pattern: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) {
    const suffix = canonicalHostOf(pattern.slice(2));
    return suffix !== undefined && ipVersion(suffix) === 0;
  }
  return canonicalHostOf(pattern) !== undefined;
}

/** `*` one path segment (or part of one), `**` as a whole segment: any number of segments. */
export function compilePathGlob(glob: string): Test<string> {
  let source = '^';
  const segments = glob.split('/');
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    if (i === 0) {
      if (seg !== '') source += seg === '**' ? '.*' : segmentSource(seg);
      continue;
    }
    if (seg === '**') source += '(?:/.*)?';
    else source += '/' + segmentSource(seg);
  }
  const re = new RegExp(source + '$');
  return (p) => re.test(p);
}

function segmentSource(seg: string): string {
  return seg
    .split('*')
    .map((lit) => lit.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]*');
}

/** Media type pattern: exact, `type/*`, or `*` / absent for anything (including no body type). */
export function compileContentType(pattern: string | undefined): Test<string> {
  if (pattern === undefined || pattern === '*' || pattern === '*/*') return () => true;
  const p = pattern.toLowerCase().split(';')[0].trim();
  if (p.endsWith('/*')) {
    const prefix = p.slice(0, -1);
    return (t) => t.startsWith(prefix);
  }
  return (t) => t === p;
}

const UNRESERVED_ESCAPE = /%(2[DdEe]|3[0-9]|[46][1-9A-Fa-f]|[57][0-9Aa]|5[Ff]|7[Ee])/g;

/** `;params` of one path segment (RFC 3986 §3.3): `/v1/customers;jsessionid=1/` → `/v1/customers/`. */
const SEGMENT_PARAMS = /;[^/]*/g;

/**
 * The path a server would see: escapes of unreserved characters decoded (RFC 3986 §6.2.2),
 * `;params` dropped from every segment (servlet containers and others ignore them, `..;` included),
 * then dot segments resolved, so neither `/v1/%63ustomers/../customers` nor `/v1/customers;x=1`
 * can slip past `/v1/customers/**`. Letter case is kept: matching is case-sensitive.
 */
export function normalizePath(path: string): string {
  const unescaped = path.includes('%') ? path.replace(UNRESERVED_ESCAPE, (e) => String.fromCharCode(parseInt(e.slice(1), 16))) : path;
  const decoded = unescaped.includes(';') ? unescaped.replace(SEGMENT_PARAMS, '') : unescaped;
  if (!decoded.includes('/.') && !decoded.includes('//')) return decoded;
  const out: string[] = [];
  const segs = decoded.split('/');
  for (let i = 1; i < segs.length; i++) {
    const s = segs[i];
    if (s === '' && i < segs.length - 1) continue; // `//` is one separator to most servers
    if (s === '.') {
      if (i === segs.length - 1) out.push('');
    } else if (s === '..') {
      out.pop();
      if (i === segs.length - 1) out.push('');
    } else out.push(s);
  }
  return '/' + out.join('/');
}

export function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** Media type of a Content-Type header value: lower case, no parameters. */
export function mediaTypeOf(header: string | undefined): string {
  if (!header) return '';
  const semi = header.indexOf(';');
  return (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
}
