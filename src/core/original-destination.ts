// Where a redirected connection was going: the kernel keeps the destination that iptables REDIRECT
// rewrote, and getsockopt(SO_ORIGINAL_DST) on the accepted socket returns it (IPv4: SOL_IP, IPv6:
// SOL_IPV6 with IP6T_SO_ORIGINAL_DST, both option 80). Node has no API for it, so libc's
// getsockopt is called through koffi, an FFI whose npm package carries prebuilt binaries (no
// compiler, no install script). It is imported only when a transparent listener starts or `dpg
// capture` probes its redirect: both edges use it, so it lives here, inward of them.

import type { Socket } from 'node:net';

export interface OriginalDestination {
  /** Canonical text form: dotted quad, or RFC 5952 IPv6 without brackets. */
  readonly address: string;
  readonly port: number;
  readonly family: 4 | 6;
}

/** Reads a socket's original destination; undefined when the connection was not redirected. */
export type OriginalDestinationReader = (socket: Socket) => OriginalDestination | undefined;

const SOL_IP = 0;
const SOL_IPV6 = 41;
const SO_ORIGINAL_DST = 80;
const ENOENT = 2;
const SOCKADDR_IN6_SIZE = 28;

/** Loads koffi and binds getsockopt once. Linux only: elsewhere there is no SO_ORIGINAL_DST. */
export async function loadOriginalDestinationReader(): Promise<OriginalDestinationReader> {
  if (process.platform !== 'linux') throw new Error('transparent capture needs Linux (SO_ORIGINAL_DST)');
  const koffi = (await import('koffi')).default;
  // The process's own symbols: libc's getsockopt, glibc or musl alike.
  const libc = koffi.load(null as unknown as string);
  const getsockopt = libc.func('int getsockopt(int fd, int level, int name, _Out_ void *value, _Inout_ void *length)') as (
    fd: number,
    level: number,
    name: number,
    value: Buffer,
    length: Buffer,
  ) => number;
  // One buffer pair for every call: calls are synchronous on the one JS thread.
  const value = Buffer.alloc(SOCKADDR_IN6_SIZE);
  const length = Buffer.alloc(4);
  return (socket) => {
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) throw new Error('the accepted socket has no file descriptor');
    const family = socket.remoteFamily === 'IPv6' ? 6 : 4;
    length.writeUInt32LE(family === 6 ? SOCKADDR_IN6_SIZE : 16);
    if (getsockopt(fd, family === 6 ? SOL_IPV6 : SOL_IP, SO_ORIGINAL_DST, value, length) !== 0) {
      const errno = koffi.errno();
      if (errno === ENOENT) return undefined; // no NAT entry: a direct connection to the listener
      throw Object.assign(new Error(`getsockopt(SO_ORIGINAL_DST) failed with errno ${errno}`), { errno });
    }
    return parseSockaddr(value, family);
  };
}

/** sockaddr_in / sockaddr_in6 as the kernel writes them (port and address in network order). */
export function parseSockaddr(buf: Buffer, family: 4 | 6): OriginalDestination {
  const port = buf.readUInt16BE(2);
  if (family === 4) return { address: `${buf[4]}.${buf[5]}.${buf[6]}.${buf[7]}`, port, family };
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push(buf.readUInt16BE(8 + i * 2).toString(16));
  return { address: canonicalIpv6(groups), port, family };
}

/** RFC 5952: lower case, no leading zeros, the longest run (≥ 2) of zero groups as `::`. */
function canonicalIpv6(groups: string[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  if (bestStart === -1) return groups.join(':');
  return `${groups.slice(0, bestStart).join(':')}::${groups.slice(bestStart + bestLength).join(':')}`;
}
