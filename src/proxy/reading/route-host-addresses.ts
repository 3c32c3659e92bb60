// A routed host name reached by one of its addresses is that host: `CONNECT 203.0.113.7:443` is
// intercepted and protected like `CONNECT api.partner.example:443` when the name resolves to that
// address. The names of routes are resolved at start and on a refresh interval, with the same
// resolver the upstream connections use (getaddrinfo, so /etc/hosts counts); the resolver is
// injectable so tests need no DNS.

import { lookup } from 'node:dns/promises';
import type { Logger } from '../../core/logger.ts';
import { canonicalHostOf, ipVersion } from './canonical-host.ts';

/** Every address a name resolves to (any spelling; they are canonicalised here). */
export type ResolveHost = (name: string) => Promise<readonly string[]>;

/** getaddrinfo through Node's dns.lookup: the addresses undici would dial. */
export const systemResolver: ResolveHost = async (name) => (await lookup(name, { all: true, verbatim: true })).map((a) => a.address);

/** What the route table asks: the route host names an address belongs to. */
export interface HostAliases {
  /** Route host names (canonical) that resolved to this canonical address; empty when none. */
  namesFor(address: string): readonly string[];
}

export const NO_ALIASES: HostAliases = { namesFor: () => [] };

/**
 * How long an address stays its name's after a lookup last returned it. DNS answers rotate
 * (round-robin, load balancers returning subsets): forgetting an address at the next lookup
 * would let an app that resolved a moment earlier step around the route.
 */
const REMEMBER_MS = 24 * 3600_000;

export interface RouteHostAddressesOptions {
  readonly names: readonly string[];
  readonly resolve: ResolveHost;
  readonly refreshMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

export class RouteHostAddresses implements HostAliases {
  private readonly names: readonly string[];
  private readonly options: RouteHostAddressesOptions;
  /** address → (name → last seen). */
  private readonly seen = new Map<string, Map<string, number>>();
  private byAddress = new Map<string, readonly string[]>();
  private timer: NodeJS.Timeout | undefined;
  private first: Promise<void> | undefined;
  private settled = false;

  constructor(options: RouteHostAddressesOptions) {
    this.options = options;
    // Only exact names: IP routes are already addresses, wildcards cannot be resolved.
    this.names = [...new Set(options.names.filter((n) => n !== '' && !n.includes('*') && ipVersion(n) === 0))];
  }

  /** Starts the first lookup and the refresh timer. `ready` turns true once the first lookup ended. */
  start(): Promise<void> {
    this.first ??= this.refresh().finally(() => {
      this.settled = true;
    });
    if (this.names.length > 0 && this.timer === undefined) {
      this.timer = setInterval(() => void this.refresh(), this.options.refreshMs);
      this.timer.unref();
    }
    return this.first;
  }

  /** False until every route host name has been looked up once (found or not). */
  get ready(): boolean {
    return this.names.length === 0 || this.settled;
  }

  namesFor(address: string): readonly string[] {
    return this.byAddress.get(address) ?? [];
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One round of lookups. A failed lookup keeps what was known: a DNS blip must not open a gap. */
  async refresh(): Promise<void> {
    const now = (this.options.now ?? Date.now)();
    await Promise.all(
      this.names.map(async (name) => {
        let addresses: readonly string[];
        try {
          addresses = await this.options.resolve(name);
        } catch (err) {
          this.options.logger.warn({ host: name, code: (err as { code?: string })?.code }, 'proxy: a route host name could not be resolved; requests by its addresses are matched by what was known');
          return;
        }
        for (const raw of addresses) {
          const address = canonicalHostOf(raw);
          if (address === undefined || ipVersion(address) === 0) continue;
          let names = this.seen.get(address);
          if (!names) this.seen.set(address, (names = new Map()));
          names.set(name, now);
        }
      }),
    );
    const next = new Map<string, readonly string[]>();
    for (const [address, names] of this.seen) {
      for (const [name, at] of names) if (now - at > REMEMBER_MS) names.delete(name);
      if (names.size === 0) this.seen.delete(address);
      else next.set(address, [...names.keys()]);
    }
    this.byAddress = next;
  }
}
