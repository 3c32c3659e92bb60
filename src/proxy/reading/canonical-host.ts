// One spelling per host. A route for 127.0.0.1 must not be bypassed with 127.1, 2130706433,
// 0x7f000001, 0177.0.0.1 or [::ffff:127.0.0.1], nor a route for ::1 with [0::1]: every IP literal
// is read by the WHATWG URL host parser (node:url `domainToASCII`, the parser behind Node's `URL`,
// which accepts the same IPv4 forms as inet_aton and so as the resolver the upstream is dialled
// with), then written in one form. Used by every listener and by the route table; a listener that
// knows only a Host header, an SNI name or an original destination address calls these too.

import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
/** Dotted decimal without leading zeros: the canonical IPv4 form. */
const CANONICAL_IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);
/** The WHATWG parser reads a host whose last label is a number (decimal or 0x…) as IPv4. */
const ENDS_IN_NUMBER = /(?:^|\.)(?:\d+|0x[0-9a-f]*)$/;

/**
 * A host name after IDNA (`xn--` labels), lower case: letters, digits, `-`, `_` and dots only.
 * Without `xn--`, such a name is also what IDNA maps to itself.
 */
const NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/;

/**
 * The canonical form of a host as routes see it, or undefined when it is not a valid host:
 * - IPv4 in any spelling the URL parser accepts → dotted decimal (`0x7f.1` → `127.0.0.1`);
 * - IPv6 (with or without brackets) → RFC 5952 compressed lower case, no brackets (`0:0::1` → `::1`);
 *   an IPv4-mapped address (`::ffff:127.0.0.1`, `::ffff:7f00:1`) → its IPv4 (a dual-stack socket
 *   dialling it reaches that IPv4 address); zone ids (`%eth0`) are refused;
 * - a name → IDNA ASCII, lower case, without trailing dots (`API.Example.` → `api.example`: an
 *   absolute name is the same host to DNS).
 * Percent-escapes in a host are decoded by the parser (`127.0.0.%31` is `127.0.0.1`).
 */
export function canonicalHostOf(raw: string): string | undefined {
  if (raw === '' || raw.length > 1024) return undefined;
  // Fast paths for what is already canonical (most requests): the parser would return it unchanged.
  if (CANONICAL_IPV4.test(raw)) return raw;
  if (NAME.test(raw) && !raw.includes('xn--') && !ENDS_IN_NUMBER.test(raw)) return raw;
  const bracketed = raw.startsWith('[') && raw.endsWith(']');
  const inner = bracketed ? raw.slice(1, -1) : raw;
  if (bracketed || inner.includes(':')) {
    if (inner.includes('%') || inner.includes('[') || inner.includes(']')) return undefined; // zone ids, nesting
    const parsed = domainToASCII(`[${inner}]`);
    if (parsed === '') return undefined;
    return unmapIpv4(parsed.slice(1, -1));
  }
  // The parser would cut at these (`a/b` reads as `a`): a host holding one is no host.
  if (/[\x00-\x20\x7f/\\?#@[\]<>^|]/.test(inner)) return undefined;
  const parsed = domainToASCII(inner);
  if (parsed === '') return undefined;
  if (isIP(parsed) === 4) return parsed;
  const name = trimTrailingDots(parsed);
  // `127..` is no IPv4 to the parser, but `127` — what is left — is (0.0.0.127): read what is left
  // again, so the canonical form reads as itself and names what it is dialled as.
  if (name !== parsed && ENDS_IN_NUMBER.test(name)) return canonicalHostOf(name);
  return NAME.test(name) ? name : undefined;
}

/** `name...` → `name`, by a loop: `/\.+$/` backtracks quadratically on a long run of inner dots. */
export function trimTrailingDots(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0x2e) end--;
  return end === text.length ? text : text.slice(0, end);
}

/** `::ffff:7f00:1` → `127.0.0.1`; any other address as it is. `address` is canonical IPv6. */
function unmapIpv4(address: string): string {
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(address);
  if (!m) return address;
  const hi = parseInt(m[1], 16);
  const lo = parseInt(m[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** 4 or 6 for a canonical IP literal, 0 for a name. */
export function ipVersion(canonical: string): 0 | 4 | 6 {
  return isIP(canonical) as 0 | 4 | 6;
}

/**
 * `0.0.0.0` and `::` name no host, yet dialling them reaches the local machine on Linux: a request
 * for them is refused rather than matched as an unknown host.
 */
export function isUnspecifiedAddress(canonical: string): boolean {
  return canonical === '0.0.0.0' || canonical === '::';
}

/** A canonical host and a port. */
export interface Authority {
  readonly host: string;
  readonly port: number;
}

/**
 * Reads `host[:port]` (IPv6 in brackets) as sent in a CONNECT line, an absolute URL or a Host
 * header. Without a port, `defaultPort` applies (undefined: the port is required). Returns
 * undefined for anything malformed: userinfo, a bad port, a host the URL parser refuses.
 */
export function readAuthority(authority: string | undefined, defaultPort?: number): Authority | undefined {
  if (!authority || authority.length > 1100) return undefined;
  let hostPart: string;
  let portPart: string | undefined;
  if (authority.startsWith('[')) {
    const close = authority.indexOf(']');
    if (close === -1) return undefined;
    hostPart = authority.slice(0, close + 1);
    const rest = authority.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return undefined;
    portPart = rest === '' ? undefined : rest.slice(1);
  } else {
    const colon = authority.lastIndexOf(':');
    hostPart = colon === -1 ? authority : authority.slice(0, colon);
    portPart = colon === -1 ? undefined : authority.slice(colon + 1);
    if (hostPart.includes(':')) return undefined; // an unbracketed IPv6 address is ambiguous with a port
  }
  if (!hostPart.startsWith('[') && /[\s/\\?#@[\]]/.test(hostPart)) return undefined;
  let port: number;
  if (portPart === undefined || portPart === '') {
    if (defaultPort === undefined) return undefined;
    port = defaultPort;
  } else {
    if (!/^\d{1,5}$/.test(portPart)) return undefined;
    port = Number(portPart);
    if (port < 1 || port > 65535) return undefined;
  }
  const host = canonicalHostOf(hostPart);
  return host === undefined ? undefined : { host, port };
}

/** `host:port` for a Host header: IPv6 in brackets, the port left out when it is the scheme's default. */
export function formatAuthority(host: string, port: number, scheme: 'http' | 'https'): string {
  const h = ipVersion(host) === 6 ? `[${host}]` : host;
  return port === (scheme === 'https' ? 443 : 80) ? h : `${h}:${port}`;
}
