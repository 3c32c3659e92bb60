// The capture rules as data: what `dpg capture` installs in the current network namespace, built as
// iptables-restore input (one atomic transaction per table and family) plus the jumps from OUTPUT.
// Pure: no process is run here, so --dry-run prints exactly what would be applied.
//
// nat/DPG_OUTPUT (TCP), in order — the first match decides:
//   1. the gateway's own UID            → RETURN (its upstream connections must not come back to it)
//      and excluded UIDs (a service mesh's proxy, e.g. Istio's 1337: its connections carry what the
//      gateway already protected, and capturing them again would loop gateway → mesh → gateway)
//   2. loopback destinations            → RETURN (by destination, 127.0.0.0/8 and ::1: not `-o lo`,
//                                          which would also exempt the pod's own non-loopback addresses)
//   3. excluded CIDRs                   → RETURN
//   4. excluded ports (with `*` only)   → RETURN
//   5. included ports                   → REDIRECT to the transparent listener (lands on 127.0.0.1 / ::1)
// filter/DPG_OUTPUT (UDP): the same exemptions, then UDP to the included ports (443 with `*`) is
// rejected, so HTTP/3 clients fall back to TCP instead of leaving uncaptured over QUIC.

import { BlockList, isIP } from 'node:net';

export const CHAIN = 'DPG_OUTPUT';

export interface CaptureOptions {
  /** UID the gateway runs as; its connections are exempt. Never 0. */
  readonly proxyUid: number;
  /** UID the app runs as: checked only (capture refuses when it is the gateway's). */
  readonly appUid?: number;
  /** Further UIDs whose connections are never captured: a service mesh's proxy (docs/kubernetes.md, Service mesh). */
  readonly excludeUids?: readonly number[];
  /** Port of the transparent listener. */
  readonly redirectPort: number;
  readonly includePorts: readonly number[] | '*';
  readonly excludePorts: readonly number[];
  readonly excludeCidrs: readonly string[];
}

export type Family = 4 | 6;

/** A rule appended to OUTPUT (the only change outside our own chains). */
export interface Jump {
  readonly table: 'nat' | 'filter';
  /** Arguments after `-t TABLE -I|-C|-D`. */
  readonly spec: readonly string[];
}

export const JUMPS: readonly Jump[] = [
  { table: 'nat', spec: ['OUTPUT', '-p', 'tcp', '-j', CHAIN] },
  { table: 'filter', spec: ['OUTPUT', '-p', 'udp', '-j', CHAIN] },
];

const LOOPBACK: Record<Family, string> = { 4: '127.0.0.0/8', 6: '::1/128' };
/** multiport takes at most 15 ports per rule. */
const MULTIPORT_MAX = 15;

/** Every problem with the options, as messages for the user; empty when they can be applied. */
export function checkOptions(o: CaptureOptions): string[] {
  const problems: string[] = [];
  const uid = (n: number): boolean => Number.isInteger(n) && n >= 0 && n <= 0xfffffffe;
  if (!uid(o.proxyUid)) problems.push('--proxy-uid must be a UID (a whole number)');
  else if (o.proxyUid === 0) problems.push('--proxy-uid 0 is refused: root would be exempt, and so would every app running as root');
  for (const u of o.excludeUids ?? []) {
    if (!uid(u)) problems.push('--exclude-uids must be UIDs (whole numbers)');
    else if (u === 0) problems.push('--exclude-uids 0 is refused: every app running as root would be exempt');
    else if (o.appUid !== undefined && u === o.appUid) problems.push(`--exclude-uids ${u} is the app's UID: its connections would be exempt from capture`);
  }
  if (o.appUid !== undefined) {
    if (!uid(o.appUid)) problems.push('--app-uid must be a UID (a whole number)');
    else if (o.appUid === o.proxyUid) problems.push(`--app-uid ${o.appUid} is the gateway's UID: the app's connections would be exempt from capture`);
  }
  const port = (p: number): boolean => Number.isInteger(p) && p >= 1 && p <= 65535;
  if (!port(o.redirectPort)) problems.push('--redirect-port must be a port (1-65535)');
  if (o.includePorts !== '*') {
    if (o.includePorts.some((p) => !port(p))) problems.push('--include-ports must be ports (1-65535) or *');
    else if (effectivePorts(o).length === 0) problems.push('no port is left to capture once --exclude-ports is taken out');
  }
  if (o.excludePorts.some((p) => !port(p))) problems.push('--exclude-ports must be ports (1-65535)');
  for (const c of o.excludeCidrs) if (parseCidr(c) === undefined) problems.push(`--exclude-cidrs: ${c} is not an IPv4 or IPv6 CIDR`);
  return problems;
}

/** The included ports with the excluded ones taken out (with `*`: undefined). */
export function effectivePorts(o: CaptureOptions): number[] {
  if (o.includePorts === '*') return [];
  const excluded = new Set(o.excludePorts);
  return [...new Set(o.includePorts)].filter((p) => !excluded.has(p)).sort((a, b) => a - b);
}

export function parseCidr(text: string): { address: string; prefix: number; family: Family } | undefined {
  const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(text.trim());
  if (!m) return undefined;
  const family = isIP(m[1]);
  if (family === 0) return undefined;
  const prefix = m[2] === undefined ? (family === 4 ? 32 : 128) : Number(m[2]);
  if (prefix > (family === 4 ? 32 : 128)) return undefined;
  try {
    new BlockList().addSubnet(m[1], prefix, family === 4 ? 'ipv4' : 'ipv6');
  } catch {
    return undefined;
  }
  return { address: m[1], prefix, family: family as Family };
}

/** Whether `address` falls in one of the CIDRs. */
export function inCidrs(address: string, cidrs: readonly string[]): boolean {
  const list = new BlockList();
  for (const c of cidrs) {
    const p = parseCidr(c);
    if (p) list.addSubnet(p.address, p.prefix, p.family === 4 ? 'ipv4' : 'ipv6');
  }
  return list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The iptables-restore --noflush input for one family: both tables, our chains only, flushed and refilled. */
export function restoreInput(o: CaptureOptions, family: Family): string {
  const cidrs = o.excludeCidrs.map(parseCidr).filter((c) => c !== undefined && c.family === family).map((c) => `${c!.address}/${c!.prefix}`);
  const uids = [...new Set(o.excludeUids ?? [])].filter((u) => u !== o.proxyUid);
  const exemptions = [
    `-A ${CHAIN} -m owner --uid-owner ${o.proxyUid} -j RETURN`,
    ...uids.map((u) => `-A ${CHAIN} -m owner --uid-owner ${u} -j RETURN`),
    `-A ${CHAIN} -d ${LOOPBACK[family]} -j RETURN`,
    ...cidrs.map((c) => `-A ${CHAIN} -d ${c} -j RETURN`),
  ];
  const nat = ['*nat', `:${CHAIN} - [0:0]`, ...exemptions];
  const filter = ['*filter', `:${CHAIN} - [0:0]`, ...exemptions];
  const reject = family === 4 ? 'icmp-port-unreachable' : 'icmp6-port-unreachable';
  if (o.includePorts === '*') {
    const excluded = [...new Set(o.excludePorts)].sort((a, b) => a - b);
    for (const group of chunks(excluded, MULTIPORT_MAX)) nat.push(`-A ${CHAIN} -p tcp -m multiport --dports ${group.join(',')} -j RETURN`);
    nat.push(`-A ${CHAIN} -p tcp -j REDIRECT --to-ports ${o.redirectPort}`);
    if (!excluded.includes(443)) filter.push(`-A ${CHAIN} -p udp --dport 443 -j REJECT --reject-with ${reject}`);
  } else {
    for (const group of chunks(effectivePorts(o), MULTIPORT_MAX)) {
      nat.push(`-A ${CHAIN} -p tcp -m multiport --dports ${group.join(',')} -j REDIRECT --to-ports ${o.redirectPort}`);
      filter.push(`-A ${CHAIN} -p udp -m multiport --dports ${group.join(',')} -j REJECT --reject-with ${reject}`);
    }
  }
  return [...nat, 'COMMIT', ...filter, 'COMMIT', ''].join('\n');
}

/** What capture needs of a route: its name and port. */
export interface PortedRoute {
  readonly name?: string;
  readonly match?: { readonly port?: number };
}

/**
 * The default include ports for a config's routes: the ports they name; EVERY port (`*`) as soon as
 * one route names none, because such a route matches every port, and a port left uncaptured would
 * let its requests go direct, in clear (review finding 8); 80 and 443 when there are no routes.
 */
export function routePorts(routes: readonly PortedRoute[]): number[] | '*' {
  if (routes.length === 0) return [80, 443];
  if (unportedRoutes(routes).length > 0) return '*';
  return [...new Set(routes.map((r) => r.match?.port as number))].sort((a, b) => a - b);
}

/** The names of the routes that name no port (they match every port). */
export function unportedRoutes(routes: readonly PortedRoute[]): string[] {
  return routes.filter((r) => r.match?.port === undefined).map((r, i) => r.name ?? `#${i + 1}`);
}

/** `partner 8443, legacy every port`: each route with the port it matches, for capture's summary. */
export function describeRoutePorts(routes: readonly PortedRoute[]): string {
  if (routes.length === 0) return 'none';
  return routes.map((r, i) => `${r.name ?? `#${i + 1}`} ${r.match?.port ?? 'every port'}`).join(', ');
}

/**
 * Why some route's port would be left uncaptured by these options (empty: every port any route
 * matches is captured). A route naming port P needs P included and not excluded; a route naming no
 * port matches every port, so it needs `*` with nothing excluded. Capture refuses to install rules
 * that fail this (issue 16 class 10): a request to such a port would go direct, in clear, silently.
 */
export function uncapturedRoutes(routes: readonly PortedRoute[], o: Pick<CaptureOptions, 'includePorts' | 'excludePorts'>): string[] {
  const excluded = new Set(o.excludePorts);
  const included = o.includePorts === '*' ? undefined : new Set(o.includePorts);
  const problems: string[] = [];
  routes.forEach((r, i) => {
    const name = r.name ?? `#${i + 1}`;
    const port = r.match?.port;
    if (port === undefined) {
      if (included) problems.push(`route ${name} names no port, so it matches every port, but only TCP ${[...included].sort((a, b) => a - b).join(',')} would be captured`);
      else if (excluded.size > 0) problems.push(`route ${name} names no port, so it matches every port, but TCP ${[...excluded].sort((a, b) => a - b).join(',')} would be excluded`);
    } else if (excluded.has(port)) problems.push(`route ${name} is on port ${port}, which --exclude-ports leaves out`);
    else if (included && !included.has(port)) problems.push(`route ${name} is on port ${port}, which is not among the captured ports ${[...included].sort((a, b) => a - b).join(',')}`);
  });
  return problems;
}

/**
 * The warning `dpg capture` and `dpg validate` print about routes without a port: what capture does
 * for them, given the ports it captures (`undefined`: the default, every port).
 */
export function unportedWarning(names: readonly string[], captured?: readonly number[] | '*'): string {
  const which = `route${names.length > 1 ? 's' : ''} ${names.join(', ')} name${names.length > 1 ? '' : 's'} no port, so ${names.length > 1 ? 'they match' : 'it matches'} every port`;
  if (captured !== undefined && captured !== '*') {
    return `${which}, but only TCP ${captured.join(',')} ${captured.length > 1 ? 'are' : 'is'} captured: requests to ${names.length > 1 ? 'them' : 'it'} on any other port go direct, in clear`;
  }
  return (
    `${which}: dpg capture redirects every TCP port by default, so connections to other services pass through the gateway ` +
    '(spliced untouched; server-speaks-first protocols wait peekTimeoutMs). Give each route a port to capture only those'
  );
}
