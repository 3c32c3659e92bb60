// Which redirected connections a route could concern, from nothing but their original destination
// (address and port), and which routed host names each address belongs to.
//
// - A port no route can match (routes name other ports) is never looked at: spliced from byte one.
// - A route whose host is an IP literal covers that address only.
// - A route whose host is a name or wildcard covers its port(s) on EVERY address: the app may have
//   resolved the name to an address the gateway never saw (round-robin DNS, its own /etc/hosts), so
//   the TLS server name or the Host header decides, not the address.
// (That an address a routed name resolves to is that host is the route table's business: it is
// compiled with the proxy's route-host-addresses.ts, shared with CONNECT.)

import type { ProxyRoute } from '../../config/types.ts';
import { canonicalHostOf, ipVersion } from '../reading/canonical-host.ts';

export interface DestinationCoverage {
  /** True when some route could match a request sent to this address and port. */
  covers(address: string, port: number): boolean;
  /** True when some route could match a request on this port, at whatever address. */
  coversPort(port: number): boolean;
}

interface PortRule {
  /** undefined: any port. */
  readonly port: number | undefined;
  /** undefined: any address (a name or wildcard host); else the one IP literal, canonical. */
  readonly address: string | undefined;
}

export class RouteCoverage implements DestinationCoverage {
  private readonly rules: readonly PortRule[];

  constructor(routes: readonly ProxyRoute[]) {
    this.rules = routes.map((r) => {
      const host = r.match?.host;
      const canonical = host === undefined || host === '*' ? undefined : canonicalHostOf(host);
      return { port: r.match?.port, address: canonical !== undefined && ipVersion(canonical) !== 0 ? canonical : undefined };
    });
  }

  covers(address: string, port: number): boolean {
    for (const rule of this.rules) {
      if (rule.port !== undefined && rule.port !== port) continue;
      if (rule.address === undefined || rule.address === address) return true;
    }
    return false;
  }

  coversPort(port: number): boolean {
    return this.rules.some((rule) => rule.port === undefined || rule.port === port);
  }
}
