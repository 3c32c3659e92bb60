// Route matching, compiled once from the `proxy.routes` config: host (exact or `*.` wildcard),
// port, methods, path glob and content type. First match wins.

import type { ProxyRoute, RouteMatch } from '../../config/types.ts';
import { canonicalHostOf, ipVersion, trimTrailingDots } from './canonical-host.ts';
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
  /**
   * The address the request will be dialled at, when the listener fixed it (the transparent
   * listener's original destination, a name resolved for an IP-literal route): the request is
   * matched as that address too (and as any routed name it belongs to).
   */
  readonly address?: string;
  /**
   * Other methods the upstream may run the request as (method-override.ts): matched under each of
   * them too; ANY_METHOD when a body the proxy has not read yet may name one.
   */
  readonly alsoMethods?: readonly string[];
}

/** In `alsoMethods`: the request may be run as any method (routes' `methods` exclude nothing). */
export const ANY_METHOD = '*';

const NONE: readonly string[] = [];

type Test<T> = (value: T) => boolean;

export interface CompiledRoute {
  readonly route: ProxyRoute;
  /** What the route's host criterion is: none (absent or `*`), an IP literal, or a name or wildcard. */
  readonly hostKind: 'any' | 'address' | 'name';
  readonly matchesHostPort: (host: string, port: number) => boolean;
  readonly matchesPort: (port: number) => boolean;
  /** `method` in upper case. */
  readonly matchesMethod: (method: string) => boolean;
  /** `path` already normalised (normalizePath). */
  readonly matchesPath: (path: string) => boolean;
  readonly matchesContentType: (mediaType: string) => boolean;
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
  /**
   * True when some route could match requests to this host and port (or to `address`, where the
   * connection is dialled): CONNECT is intercepted.
   */
  intercepts(host: string, port: number, address?: string): boolean;
  /**
   * True when a route for a host name or wildcard matches the port, method and path: a request
   * that names no host (no Host header, no authority, no TLS server name) leaves its server to pick
   * one, and it may be that name. `facts.host` is ignored.
   */
  coversUnnamed(facts: RequestFacts): boolean;
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
  /** The method, or one the request may be run as (method override). */
  const coversMethod = (c: CompiledRoute, facts: RequestFacts): boolean => {
    if (c.matchesMethod(facts.method)) return true;
    for (const m of facts.alsoMethods ?? NONE) if (m === ANY_METHOD || c.matchesMethod(m)) return true;
    return false;
  };
  /**
   * A request's host readings: the host as given, and the dialled address when it is another, each
   * with the routed names it is an address of (empty unless it is one).
   */
  const readHosts = (host: string, port: number, address: string | undefined) => {
    const h = canonicalHost(host);
    const names = aliases.namesFor(h);
    const a = address === undefined ? undefined : canonicalHost(address);
    const dialled = a !== undefined && a !== h ? a : undefined;
    const dialledNames = dialled === undefined ? NONE : aliases.namesFor(dialled);
    return (c: CompiledRoute): boolean => coversHost(c, h, names, port) || (dialled !== undefined && coversHost(c, dialled, dialledNames, port));
  };
  const select = (facts: RequestFacts): RouteSelection | undefined => {
    const covers = readHosts(facts.host, facts.port, facts.address);
    const path = normalizePath(facts.path);
    let covering: ProxyRoute | undefined;
    for (const c of compiled) {
      if (!covers(c) || !coversMethod(c, facts) || !c.matchesPath(path)) continue;
      if (c.matchesContentType(facts.contentType)) return { route: c.route, contentTypeMatched: true };
      covering ??= c.route;
    }
    return covering === undefined ? undefined : { route: covering, contentTypeMatched: false };
  };
  return {
    select,
    match: (facts) => select(facts)?.route,
    intercepts(host, port, address) {
      return compiled.some(readHosts(host, port, address));
    },
    coversUnnamed(facts) {
      const path = normalizePath(facts.path);
      return compiled.some((c) => c.hostKind === 'name' && c.matchesPort(facts.port) && coversMethod(c, facts) && c.matchesPath(path));
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
  return trimTrailingDots(host.toLowerCase());
}


export function compileRoute(route: ProxyRoute): CompiledRoute {
  const m: RouteMatch = route.match ?? {};
  const host = compileHost(m.host);
  const port: Test<number> = m.port === undefined ? () => true : (p) => p === m.port;
  const methods = m.methods && m.methods.length > 0 ? new Set(m.methods.map((x) => x.toUpperCase())) : undefined;
  const path = m.path === undefined ? () => true : compilePathMatch(m.path, m.pathMatch ?? 'lenient');
  const literal = m.host === undefined || m.host === '*' || m.host.startsWith('*.') ? undefined : canonicalHostOf(m.host);
  return {
    route,
    hostKind: m.host === undefined || m.host === '*' ? 'any' : literal !== undefined && ipVersion(literal) !== 0 ? 'address' : 'name',
    matchesHostPort: (h, p) => host(h) && port(p),
    matchesPort: port,
    matchesMethod: (method) => methods === undefined || methods.has(method),
    matchesPath: path,
    matchesContentType: compileContentType(m.contentType),
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

/**
 * A route's path criterion. `exact`: the glob against the canonical path as it is. `lenient` (the
 * default, DESIGN §9 "when in doubt, it is routed"): the glob matches when it matches any spelling
 * common servers route to the same handler — letter case ignored (Express, ASP.NET, IIS), and the
 * path's `routeSpellings` tried too (Rails' format suffix, IIS's trailing dots and spaces).
 */
export function compilePathMatch(glob: string, mode: 'lenient' | 'exact'): Test<string> {
  if (mode === 'exact') return compilePathGlob(glob);
  const lowered = glob.toLowerCase();
  const test = compilePathGlob(lowered.length > 1 && lowered.endsWith('/') && !lowered.endsWith('*/') ? lowered.replace(/\/+$/, '') || '/' : lowered);
  return (path) => {
    const p = path.toLowerCase();
    if (test(p)) return true;
    const bare = bareRoutePath(p);
    return bare !== p && test(bare);
  };
}

/** Trailing spaces and dots of a segment, a space written as it arrives (`%20`) included. */
const TRAILING_DOTS_SPACES = /(?:\.|%20| )+$/;

/**
 * The path without what servers drop before routing, for lenient matching: trailing dots and
 * spaces of every segment (IIS and Windows file names drop them), empty segments (trailing and
 * doubled slashes), and the last segment's format suffix — everything from its first `.` that is
 * not its first character (`customers.json`, `customers.xml.`, `customers.tar.gz` → `customers`:
 * Rails' `(.:format)`, Spring's suffix pattern, content negotiation by extension). Input is lower case.
 */
export function bareRoutePath(path: string): string {
  const out: string[] = [];
  for (const raw of path.split('/')) {
    const seg = raw.replace(TRAILING_DOTS_SPACES, '');
    if (seg !== '') out.push(seg);
  }
  if (out.length > 0) {
    const last = out[out.length - 1];
    const dot = last.indexOf('.', 1);
    if (dot > 0) out[out.length - 1] = last.slice(0, dot).replace(TRAILING_DOTS_SPACES, '');
    if (out[out.length - 1] === '') out.pop();
  }
  return '/' + out.join('/');
}

/**
 * `*` one path segment (or part of one), `**` as a whole segment: any number of segments.
 *
 * Time is linear in the path, whatever the glob (review finding 10: a regular expression of a glob
 * with a segment `*.*.*`, or `**` twice, took from 100 ms to minutes on a 16 KB hostile path):
 * - a glob with at most one `*` per segment and `**` only at its end is a regular expression: each
 *   `[^/]*` is anchored, cannot cross a `/`, and is followed only by literal text, so a failed
 *   attempt gives its characters back once — one pass over each segment;
 * - any other glob is simulated as a small automaton over the path, one step per character.
 */
export function compilePathGlob(glob: string): Test<string> {
  if (!glob.includes('*')) return (p) => p === glob;
  const segments = glob.split('/');
  const lastStars = segments.length > 1 && segments[segments.length - 1] === '**';
  const simple = (lastStars ? segments.slice(0, -1) : segments).every((seg) => seg.indexOf('*') === seg.lastIndexOf('*'));
  if (simple) {
    const body = (lastStars ? segments.slice(0, -1) : segments).map((seg) => seg.split('*').map(escapeRegExp).join('[^/]*')).join('/');
    const re = new RegExp(`^${body}${lastStars ? '(?:/.*)?' : ''}$`);
    return (p) => re.test(p);
  }
  const tokens = globTokens(glob);
  const n = tokens.length;
  // Active states: `at[i]` before token i (at[n]: matched); `inside[i]` within a `/**`'s tail.
  let at = new Uint8Array(n + 1);
  let inside = new Uint8Array(n);
  let nextAt = new Uint8Array(n + 1);
  let nextInside = new Uint8Array(n);
  /** Empty moves, all forward: optional `*`, `**`, `/**`; a `/**` tail may end anywhere. */
  const close = (): void => {
    for (let i = 0; i < n; i++) if ((at[i] === 1 && tokens[i] < 0) || inside[i] === 1) at[i + 1] = 1;
  };
  return (path) => {
    at.fill(0);
    inside.fill(0);
    at[0] = 1;
    close();
    for (let k = 0; k < path.length; k++) {
      const ch = path.charCodeAt(k);
      nextAt.fill(0);
      nextInside.fill(0);
      let alive = false;
      for (let i = 0; i < n; i++) {
        if (inside[i] === 1) {
          nextInside[i] = 1;
          alive = true;
        }
        if (at[i] !== 1) continue;
        const t = tokens[i];
        let target: Uint8Array | undefined;
        let index = i;
        if (t >= 0) {
          if (t === ch) {
            target = nextAt;
            index = i + 1;
          }
        } else if (t === STAR) {
          if (ch !== SLASH) target = nextAt;
        } else if (t === ANY) target = nextAt;
        else if (ch === SLASH) target = nextInside; // GLOBSTAR: its `/`
        if (target !== undefined) {
          target[index] = 1;
          alive = true;
        }
      }
      if (!alive) return false;
      const spentAt = at;
      at = nextAt;
      nextAt = spentAt;
      const spentInside = inside;
      inside = nextInside;
      nextInside = spentInside;
      close();
    }
    return at[n] === 1;
  };
}

const SLASH = 0x2f;

function escapeRegExp(literal: string): string {
  return literal.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}
/** Glob tokens: a character code (≥ 0) to match, or one of these. */
const STAR = -1; // `*`: any run of characters other than `/`
const ANY = -2; // a leading `**`: anything
const GLOBSTAR = -3; // `/**` as a whole segment: nothing, or `/` and anything

function globTokens(glob: string): number[] {
  const tokens: number[] = [];
  const segments = glob.split('/');
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    if (seg === '**') {
      tokens.push(i === 0 ? ANY : GLOBSTAR);
      continue;
    }
    if (i > 0) tokens.push(SLASH);
    for (let k = 0; k < seg.length; k++) {
      const ch = seg.charCodeAt(k);
      if (ch !== 0x2a) tokens.push(ch);
      else if (tokens.at(-1) !== STAR) tokens.push(STAR); // `a**b` is `a*b`
    }
  }
  return tokens;
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
 * can slip past `/v1/customers/**`. Letter case is kept here; lenient routes ignore it (compilePathMatch).
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
