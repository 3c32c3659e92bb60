// Detected IP addresses. IPv4: the four octets FF1-encrypted in radix 256 under the `ip` format's
// own tweak, so a detected address gets the same pseudonym as in a field with `format: ip`; every
// output is a dotted-decimal address without leading zeros. IPv6: the address is pseudonymised in
// its own spelling, so Reconstruct gives back exactly what was written (`2001:DB8:0:0::1`,
// `::ffff:192.0.2.1`, `0db8`…): the groups compressed by `::` stay zero, every written hex digit
// goes through FF1 in radix 16 except a group's leading `0` (a padded group stays padded), the
// first digit of an unpadded group of two or more digits stays non-zero (cycle walk, at most 8 such
// groups: expected extra steps under (16/15)^8 - 1 = 0.68), an IPv4 tail is encrypted as eight more hex
// digits and written as dotted decimal again, and the letters keep their case. An upper-case
// address walks on until its pseudonym shows a letter (so Reconstruct can tell its case; expected
// 0.18 extra steps for the shortest, `A::1234`, about nothing for longer ones). An address writing fewer than
// five hex digits (`::1`, `::`, `fe80::`: loopback, unspecified and bare prefixes, 16^5 being the
// first size over FF1's minimum domain) is kept as it is; one mixing upper and lower case letters
// fails (`IPV6_MIXED_CASE`), as its case could not be given back.

import type { FF1 } from '../../../crypto/ff1.ts';
import { ValueError } from '../../technique.ts';
import { walkSteps } from './walk-steps.ts';
import type { DetectedTweaks } from './digit-text.ts';

const MIN_HEX = 5;
const MAX_WALK = 10_000;

/** One written piece of an IPv6 address: a hex group or the dotted IPv4 tail. */
interface Piece {
  readonly tail: boolean;
  /** Hex group: its written width, and whether it starts with a padding `0` (width > 1). */
  readonly width: number;
  readonly padded: boolean;
}

interface Layout {
  /** Text between pieces: separators[k] comes before piece k; separators[pieces.length] ends. */
  readonly separators: readonly string[];
  readonly pieces: readonly Piece[];
  readonly upper: boolean;
  /** The numerals FF1 takes, in order (radix 16). */
  readonly numerals: Uint16Array;
  /** Numeral indexes that must not be 0 (an unpadded group's first digit). */
  readonly nonZero: readonly number[];
  readonly label: string;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

function parse(text: string): Layout {
  const separators: string[] = [];
  const pieces: Piece[] = [];
  const numerals: number[] = [];
  const nonZero: number[] = [];
  let upper = false;
  let lower = false;
  let sep = '';
  let label = '';
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 58 /* : */) {
      sep += ':';
      i++;
      continue;
    }
    let j = i;
    while (j < text.length && text.charCodeAt(j) !== 58) j++;
    const group = text.slice(i, j);
    separators.push(sep);
    label += sep;
    sep = '';
    if (group.includes('.')) {
      const octets = group.split('.').map(Number);
      if (octets.length !== 4 || octets.some((o) => !(o >= 0 && o <= 255))) throw new ValueError('NOT_AN_IP_ADDRESS');
      for (const o of octets) numerals.push(o >> 4, o & 15);
      pieces.push({ tail: true, width: 0, padded: false });
      label += 'v4';
    } else {
      const width = group.length;
      const padded = width > 1 && group.charCodeAt(0) === 48;
      for (let k = padded ? 1 : 0; k < width; k++) {
        const ch = group.charCodeAt(k);
        const v = hexValue(ch);
        if (v < 0) throw new ValueError('NOT_AN_IP_ADDRESS');
        if (ch >= 65 && ch <= 70) upper = true;
        else if (ch >= 97 && ch <= 102) lower = true;
        if (k === 0 && width > 1) nonZero.push(numerals.length);
        numerals.push(v);
      }
      pieces.push({ tail: false, width, padded });
      label += padded ? `0${width}` : `${width}`;
    }
    i = j;
  }
  separators.push(sep);
  label += sep;
  if (upper && lower) throw new ValueError('IPV6_MIXED_CASE');
  return { separators, pieces, upper, numerals: Uint16Array.from(numerals), nonZero, label };
}

function render(layout: Layout, numerals: ArrayLike<number>): string {
  const hex = layout.upper ? '0123456789ABCDEF' : '0123456789abcdef';
  let out = '';
  let at = 0;
  layout.pieces.forEach((piece, k) => {
    out += layout.separators[k];
    if (piece.tail) {
      const octets: number[] = [];
      for (let o = 0; o < 4; o++) octets.push(numerals[at + 2 * o] * 16 + numerals[at + 2 * o + 1]);
      out += octets.join('.');
      at += 8;
      return;
    }
    if (piece.padded) out += '0';
    for (let d = piece.padded ? 1 : 0; d < piece.width; d++) out += hex[numerals[at++]];
  });
  return out + layout.separators[layout.pieces.length];
}

/** The numerals keep the layout: unpadded groups do not start with 0; an upper-case one shows a letter. */
function fits(layout: Layout, numerals: ArrayLike<number>): boolean {
  for (const k of layout.nonZero) if (numerals[k] === 0) return false;
  if (!layout.upper) return true;
  let hexAt = 0;
  for (const piece of layout.pieces) {
    if (piece.tail) {
      hexAt += 8;
      continue;
    }
    const digits = piece.padded ? piece.width - 1 : piece.width;
    for (let d = 0; d < digits; d++) if (numerals[hexAt + d] >= 10) return true;
    hexAt += digits;
  }
  return false;
}

export class IpScheme {
  readonly #v4Tweak: Uint8Array;

  constructor(
    private readonly ff1Radix256: FF1,
    private readonly ff1Radix16: FF1,
    private readonly tweaks: DetectedTweaks,
    ipv4Tweak: Uint8Array,
  ) {
    this.#v4Tweak = ipv4Tweak;
  }

  step(written: string, decrypt: boolean): string {
    // A prefix length or zone id (`/24`, `%eth0`), where detection takes it in, is kept as written.
    const cut = written.search(/[/%]/);
    if (cut >= 0) return this.step(written.slice(0, cut), decrypt) + written.slice(cut);
    const value = written;
    if (!value.includes(':')) return this.#v4(value, decrypt);
    const layout = parse(value);
    if (layout.numerals.length < MIN_HEX) return value;
    const tweak = this.tweaks.get(`ipv6:${layout.label}`);
    let numerals: Uint16Array = layout.numerals;
    for (let steps = 0; ; steps++) {
      numerals = decrypt ? this.ff1Radix16.decrypt(numerals, tweak) : this.ff1Radix16.encrypt(numerals, tweak);
      if (fits(layout, numerals)) return render(layout, numerals);
      if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
      walkSteps.count++;
    }
  }

  /**
   * step for many values (see KindScheme.many): FF1 once for all IPv4 addresses and once for all
   * IPv6 ones (per digit count); an IPv6 pseudonym that must walk on does so alone, its steps
   * counted in steps[k]. Undefined where step throws.
   */
  stepMany(values: readonly string[], decrypt: boolean, steps: Int32Array): (string | undefined)[] {
    const out = new Array<string | undefined>(values.length);
    const v4: number[] = [];
    const octets: number[][] = [];
    const v6: number[] = [];
    const layouts: Layout[] = [];
    const suffixes = new Array<string>(values.length);
    for (let k = 0; k < values.length; k++) {
      const written = values[k];
      const cut = suffixAt(written);
      const value = cut >= 0 ? written.slice(0, cut) : written;
      suffixes[k] = cut >= 0 ? written.slice(cut) : '';
      try {
        if (!value.includes(':')) {
          octets.push(v4Octets(value));
          v4.push(k);
          continue;
        }
        const layout = parse(value);
        if (layout.numerals.length < MIN_HEX) out[k] = value + suffixes[k];
        else {
          layouts.push(layout);
          v6.push(k);
        }
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
      }
    }
    // Every IPv4 address's four octets in one packed array, encrypted in place.
    const packed = new Uint16Array(4 * v4.length);
    const starts = new Int32Array(v4.length);
    for (let j = 0; j < v4.length; j++) {
      starts[j] = 4 * j;
      packed.set(octets[j], 4 * j);
    }
    const lengths = new Int32Array(v4.length).fill(4);
    const v4Tweaks = new Array<Uint8Array>(v4.length).fill(this.#v4Tweak);
    if (decrypt) this.ff1Radix256.decryptPacked(packed, starts, lengths, v4Tweaks);
    else this.ff1Radix256.encryptPacked(packed, starts, lengths, v4Tweaks);
    for (let j = 0; j < v4.length; j++) {
      const o = 4 * j;
      out[v4[j]] = `${packed[o]}.${packed[o + 1]}.${packed[o + 2]}.${packed[o + 3]}${suffixes[v4[j]]}`;
    }
    // IPv6: every address's hex digits in one packed array, encrypted in place; the walk (an
    // unpadded group's first digit 0, or no letter in an upper-case address) batched too.
    const tweaks = layouts.map((l) => this.tweaks.get(`ipv6:${l.label}`));
    const v6Starts = new Int32Array(layouts.length);
    const v6Lengths = new Int32Array(layouts.length);
    let total = 0;
    for (let j = 0; j < layouts.length; j++) {
      v6Starts[j] = total;
      v6Lengths[j] = layouts[j].numerals.length;
      total += v6Lengths[j];
    }
    const hex = new Uint16Array(total);
    for (let j = 0; j < layouts.length; j++) hex.set(layouts[j].numerals, v6Starts[j]);
    const numeralsOf = (j: number): Uint16Array => hex.subarray(v6Starts[j], v6Starts[j] + v6Lengths[j]);
    let walking: number[] | undefined;
    for (let walked = 0; walking === undefined || (walking.length > 0 && walked < MAX_WALK); walked++) {
      if (decrypt) this.ff1Radix16.decryptPacked(hex, v6Starts, v6Lengths, tweaks, walking);
      else this.ff1Radix16.encryptPacked(hex, v6Starts, v6Lengths, tweaks, walking);
      const still: number[] = [];
      const n = walking === undefined ? layouts.length : walking.length;
      for (let w = 0; w < n; w++) {
        const j = walking === undefined ? w : walking[w];
        if (walking !== undefined) steps[v6[j]]++;
        if (!fits(layouts[j], numeralsOf(j))) still.push(j);
      }
      walking = still;
    }
    for (let j = 0; j < v6.length; j++) {
      const numerals = numeralsOf(j);
      if (fits(layouts[j], numerals)) out[v6[j]] = render(layouts[j], numerals) + suffixes[v6[j]];
    }
    return out;
  }

  #v4(value: string, decrypt: boolean): string {
    const octets = v4Octets(value);
    const out = decrypt ? this.ff1Radix256.decrypt(octets, this.#v4Tweak) : this.ff1Radix256.encrypt(octets, this.#v4Tweak);
    return Array.from(out).join('.');
  }
}

/** Where a prefix length or zone id starts (`/`, `%`), or -1: step's `search(/[/%]/)` without a regex. */
function suffixAt(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 47 || c === 37) return i;
  }
  return -1;
}

function v4Octets(value: string): number[] {
  // The usual detected spelling (four groups of 1-3 digits) is read without split and Number;
  // anything else takes the general reading below, which decides exactly as before.
  const fast = [0, 0, 0, 0];
  let k = 0;
  let width = 0;
  for (let i = 0; i < value.length && k < 4; i++) {
    const c = value.charCodeAt(i);
    if (c >= 48 && c <= 57 && width < 3) {
      fast[k] = fast[k] * 10 + c - 48;
      width++;
    } else if (c === 46 && width > 0) {
      k++;
      width = 0;
    } else {
      k = 5;
    }
  }
  if (k === 3 && width > 0 && fast[0] <= 255 && fast[1] <= 255 && fast[2] <= 255 && fast[3] <= 255) return fast;
  const octets = value.split('.').map(Number);
  if (octets.length !== 4 || octets.some((o) => !(o >= 0 && o <= 255))) throw new ValueError('NOT_AN_IP_ADDRESS');
  return octets;
}
