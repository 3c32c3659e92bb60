// A routed host reached by another name is that host: `http://localhost:8080/…` reaches the very
// upstream a route for 127.0.0.1 protects, and `http://ingress.internal/…` the one a route for
// `api.partner.example` protects when both names resolve to one address. The transparent listener
// sees only the address and matches it (an address of a routed name counts as that name,
// route-host-addresses.ts); the forward listener must read names the same way, or it is a way
// around capture (issue 16 class 9: a captured app may reach it on 127.0.0.1). So on a port a
// route for an IP literal or an exact host name covers, a request naming a host NAME is resolved
// here first (the same getaddrinfo the upstream pool uses, injectable for tests), matched as the
// address it will be dialled at (routes.ts `RequestFacts.address`), and then dialled at exactly
// that address (`Target.connectTo`, TLS still verified against the name): what is dialled is what
// was matched, whatever a later lookup would answer. Other ports (only wildcard or any-host
// routes name them) pay nothing: the name is dialled as usual.
//
// Lookups are cached per name for the refresh interval (proxy.routeHostsRefreshMs), like the route
// host names of route-host-addresses.ts, with concurrent lookups of one name shared and at most
// MAX_NAMES names kept (least recently used out). A name that does not resolve, or whose lookup is
// not answered within `lookupTimeoutMs` (the proxy's connectTimeoutMs), is refused (502),
// never passed on to be resolved by someone else.

import type { ProxyRoute } from '../../config/types.ts';
import { canonicalHostOf, ipVersion } from './canonical-host.ts';
import type { ResolveHost } from './route-host-addresses.ts';

const MAX_NAMES = 1000;

export interface DialAddressOptions {
  readonly routes: readonly ProxyRoute[];
  /**
   * Whether requests to this address and port are routed (the route table's `intercepts`, which
   * counts addresses of routed names): among a name's addresses, a routed one is dialled first.
   * Default: IP-literal routes only.
   */
  readonly routed?: (address: string, port: number) => boolean;
  readonly resolve: ResolveHost;
  readonly refreshMs: number;
  /**
   * A lookup not answered in this time fails like one that found nothing (code EAI_AGAIN): a
   * resolver that never answers must not hold the request for ever (default 10 s).
   */
  readonly lookupTimeoutMs?: number;
  readonly now?: () => number;
}

interface Entry {
  readonly at: number;
  readonly addresses: Promise<readonly string[]>;
}

export class DialAddresses {
  /** IP-literal routes: canonical address and port (undefined: any port). */
  private readonly literals: readonly { readonly address: string; readonly port: number | undefined }[];
  private readonly routed: (address: string, port: number) => boolean;
  private readonly anyPort: boolean;
  private readonly ports: ReadonlySet<number>;
  private readonly cache = new Map<string, Entry>();
  private readonly options: DialAddressOptions;

  constructor(options: DialAddressOptions) {
    this.options = options;
    const literals: { address: string; port: number | undefined }[] = [];
    /** Ports of routes for one address or one name: where a name may be one of them. */
    const pinned: (number | undefined)[] = [];
    for (const r of options.routes) {
      const host = r.match?.host;
      const address = host === undefined || host.includes('*') ? undefined : canonicalHostOf(host);
      if (address === undefined) continue;
      if (ipVersion(address) !== 0) literals.push({ address, port: r.match?.port });
      pinned.push(r.match?.port);
    }
    this.literals = literals;
    this.routed = options.routed ?? ((a, port) => this.literals.some((l) => l.address === a && (l.port === undefined || l.port === port)));
    this.anyPort = pinned.some((p) => p === undefined);
    this.ports = new Set(pinned.filter((p): p is number => p !== undefined));
  }

  /**
   * Where a request to `host:port` must be dialled, when that must be fixed before it is matched:
   * a promise of the address (rejected like a failed lookup, code ENOTFOUND, when the name does
   * not resolve). undefined when no route for an IP literal or an exact name covers the port, or
   * `host` is an address.
   * `host` is canonical.
   */
  pin(host: string, port: number): Promise<string> | undefined {
    if (!this.anyPort && !this.ports.has(port)) return undefined;
    if (ipVersion(host) !== 0) return undefined;
    return this.lookup(host).then((addresses) => this.choose(addresses, port));
  }

  /** The first routed address on the port (when in doubt, it is routed); else the first address. */
  private choose(addresses: readonly string[], port: number): string {
    for (const a of addresses) if (this.routed(a, port)) return a;
    return addresses[0];
  }

  private lookup(name: string): Promise<readonly string[]> {
    const now = (this.options.now ?? Date.now)();
    const cached = this.cache.get(name);
    if (cached !== undefined && now - cached.at < this.options.refreshMs) {
      // Least recently used out: a hit moves the name to the end.
      this.cache.delete(name);
      this.cache.set(name, cached);
      return cached.addresses;
    }
    const addresses = this.resolveCanonical(name);
    this.cache.set(name, { at: now, addresses });
    // A failure is not kept: the next request asks again.
    addresses.catch(() => {
      if (this.cache.get(name)?.addresses === addresses) this.cache.delete(name);
    });
    if (this.cache.size > MAX_NAMES) this.cache.delete(this.cache.keys().next().value as string);
    return addresses;
  }

  private async resolveCanonical(name: string): Promise<readonly string[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error('the lookup timed out'), { code: 'EAI_AGAIN' })), this.options.lookupTimeoutMs ?? 10_000);
      timer.unref();
    });
    const answered = await Promise.race([this.options.resolve(name), timeout]).finally(() => clearTimeout(timer));
    const found = answered.map((a) => canonicalHostOf(a)).filter((a): a is string => a !== undefined && ipVersion(a) !== 0);
    if (found.length === 0) throw Object.assign(new Error('the name has no address'), { code: 'ENOTFOUND' });
    return found;
  }
}
