// Pseudonymise, IP address format: the address as a number, FF1-encrypted in its own space — an
// IPv4 address as 4 numerals of radix 256, an IPv6 address as 8 numerals of radix 65536 — so every
// address maps to a valid address of the same family, and back. IPv4 is written dotted-decimal;
// IPv6 in the RFC 5952 canonical form (lower case, longest zero run as `::`), so an address
// written otherwise (`2001:DB8:0::1`) comes back from Reconstruct canonical, not as typed.

import { isIPv4, isIPv6 } from 'node:net';
import type { Scalar } from '../../core/types.ts';
import { compileFpe, SHORT_VALUE_POLICIES, UNSUPPORTED_TYPE, type FpeJob, type ShortValuePolicy } from './fpe-core.ts';
import { OptionReader } from '../option-reader.ts';
import { addressLength } from '../../detect/ip.ts';
import { ValueError, type Technique } from '../technique.ts';

export interface IpOptions {
  readonly shortValues: ShortValuePolicy;
}

const NOT_AN_IP = 'NOT_AN_IP_ADDRESS';

/** The 8 groups of an IPv6 address (already checked by isIPv6), an IPv4 tail included. */
function ipv6Groups(text: string): number[] {
  const lastColon = text.lastIndexOf(':');
  let hex = text;
  if (text.indexOf('.', lastColon) > 0) {
    // `::ffff:192.0.2.1`: the dotted tail is the last two groups.
    const v4 = text.slice(lastColon + 1).split('.').map(Number);
    hex = `${text.slice(0, lastColon + 1)}${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`;
  }
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const gap = hex.indexOf('::');
  if (gap < 0) return parse(hex);
  const left = parse(hex.slice(0, gap));
  const right = parse(hex.slice(gap + 2));
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** RFC 5952 text of 8 groups: lower case, no leading zeros, the longest run (≥ 2) of zero groups as `::`. */
function formatIpv6(groups: ArrayLike<number>): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) ((bestStart = i), (bestLength = j - i));
    i = j;
  }
  const hex = (from: number, to: number): string => Array.from({ length: to - from }, (_, k) => groups[from + k].toString(16)).join(':');
  if (bestStart < 0) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLength, 8)}`;
}

class IpJob implements FpeJob {
  constructor(
    readonly radix: number,
    readonly tweak: Uint8Array,
    private readonly numerals: readonly number[],
    private readonly suffix: string,
  ) {}

  get length(): number {
    return this.numerals.length;
  }

  writeNumerals(into: Uint16Array, at: number): void {
    for (let k = 0; k < this.numerals.length; k++) into[at + k] = this.numerals[k];
  }

  render(out: Uint16Array, at: number): Scalar {
    const groups = out.subarray(at, at + this.numerals.length);
    return (this.radix === 256 ? Array.from(groups).join('.') : formatIpv6(groups)) + this.suffix;
  }
}

export const fpeIpTechnique: Technique<IpOptions> = {
  id: 'fpe-ip',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['format', 'shortValues'], { name: 'format', value: 'ip' });
    return { shortValues: reader.oneOf('shortValues', SHORT_VALUE_POLICIES, 'reject') };
  },

  compile(options) {
    return compileFpe(
      'fpe-ip',
      {
        plan(value, tweaks) {
          if (typeof value !== 'string') throw new ValueError(UNSUPPORTED_TYPE);
          // A zone id or prefix length written after the address (detection includes it) is kept.
          const cut = addressLength(value);
          const suffix = value.slice(cut);
          const address = cut === value.length ? value : value.slice(0, cut);
          // Dotted-decimal without leading zeros only: anything else would not come back as written.
          if (isIPv4(address) && !/(^|\.)0\d/.test(address) && !suffix.startsWith('%')) return new IpJob(256, tweaks.forShape('ipv4'), address.split('.').map(Number), suffix);
          if (isIPv6(address)) return new IpJob(65536, tweaks.forShape('ipv6'), ipv6Groups(address), suffix);
          throw new ValueError(NOT_AN_IP);
        },
        explain: () => 'IPv4 as 4 numerals radix 256, IPv6 as 8 numerals radix 65536 (canonical form)',
      },
      options.shortValues,
    );
  },
};
