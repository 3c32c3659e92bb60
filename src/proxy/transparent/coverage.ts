// Which redirected connections a route could concern, from nothing but their original destination
// (address and port), and which routed host names each address belongs to.
//
// - A port no route can match (routes name other ports) is never looked at: spliced from byte one.
// - A route whose host is an IP literal covers that address only.
// - A route whose host is a name or wildcard covers its port(s) on EVERY address: the app may have
//   resolved the name to an address the gateway never saw (round-robin DNS, its own /etc/hosts), so
//   the TLS server name or the Host header decides, not the address.
// - Route host names are resolved at start and every `resolveIntervalMs`: a connection to one of
//   their addresses is treated as that host too, whatever name it gives (an address-only or
//   mismatched name is never a way around the route).

import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { ProxyRoute } from '../../config/types.ts';
import type { Logger } from '../../core/logger.ts';
import { canonicalHost, stripBrackets } from '../routes.ts';

export interface DestinationCoverage {
  /** True when some route could match a request sent to this address and port. */
  covers(address: string, port: number): boolean;
  /** The routed names this address belongs to (resolved), plus the address itself. */
  namesOf(address: string): readonly string[];
}

interface PortRule {
  /** undefined: any port. */
  readonly port: number | undefined;
  /** undefined: any address (a name or wildcard host); else the one IP literal, canonical. */
  readonly address: string | undefined;
}

/** An IP literal in canonical text (every IPv4 spelling, IPv6 compressed); undefined for names. */
export function canonicalAddress(host: string): string | undefined {
  const bare = stripBrackets(host);
  if (isIP(bare) === 6) {
    try {
      return new URL(`http://[${bare}]/`).hostname.slice(1, -1);
    } catch {
      return undefined;
    }
  }
  // WHATWG URL parsing turns 127.1, 0x7f000001, 2130706433 and 0177.0.0.1 into 127.0.0.1.
  if (!/^[0-9a-fA-FxX.]+$/.test(bare)) return undefined;
  try {
    const h = new URL(`http://${bare}/`).hostname;
    return isIP(h) === 4 ? h : undefined;
  } catch {
    return undefined;
  }
}

export class RouteCoverage implements DestinationCoverage {
  private readonly rules: readonly PortRule[];
  /** Route host names that can be resolved (no wildcard). */
  private readonly names: readonly string[];
  private byAddress = new Map<string, readonly string[]>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    routes: readonly ProxyRoute[],
    private readonly logger?: Logger,
    private readonly resolve: (name: string) => Promise<string[]> = resolveAll,
  ) {
    const rules: PortRule[] = [];
    const names = new Set<string>();
    for (const r of routes) {
      const host = r.match?.host;
      const literal = host === undefined || host === '*' ? undefined : canonicalAddress(host);
      rules.push({ port: r.match?.port, address: literal });
      if (host !== undefined && literal === undefined && !host.includes('*')) names.add(canonicalHost(stripBrackets(host)));
    }
    this.rules = rules;
    this.names = [...names];
  }

  covers(address: string, port: number): boolean {
    for (const rule of this.rules) {
      if (rule.port !== undefined && rule.port !== port) continue;
      if (rule.address === undefined || rule.address === address) return true;
    }
    return false;
  }

  namesOf(address: string): readonly string[] {
    return this.byAddress.get(address) ?? [address];
  }

  /** Resolves every route host name now; a name that fails keeps its previous addresses. */
  async refresh(): Promise<void> {
    const previous = this.byAddress;
    const next = new Map<string, string[]>();
    const add = (address: string, name: string): void => {
      const list = next.get(address) ?? [address];
      if (!list.includes(name)) list.push(name);
      next.set(address, list);
    };
    await Promise.all(
      this.names.map(async (name) => {
        let addresses: string[];
        try {
          addresses = await this.resolve(name);
        } catch {
          this.logger?.warn({ host: name }, 'transparent proxy: a route host name did not resolve; its addresses are not known (the TLS name and Host header still route)');
          addresses = [...previous].filter(([, names]) => names.includes(name)).map(([a]) => a);
        }
        for (const a of addresses) add(canonicalAddress(a) ?? a, name);
      }),
    );
    this.byAddress = next;
  }

  /** Resolves now and then every `intervalMs` until stop(). */
  async start(intervalMs: number): Promise<void> {
    await this.refresh();
    if (this.names.length === 0) return;
    this.timer = setInterval(() => void this.refresh(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

async function resolveAll(name: string): Promise<string[]> {
  const found = await lookup(name, { all: true, verbatim: true });
  return found.map((f) => f.address);
}
