// Short values: a value whose encrypted symbols have fewer than 10^6 possible values cannot go
// through FF1 on its own symbols (SP 800-38G's minimum domain). Such values are instead permuted
// among all short values of the same layout family, a set ranked onto 0..N-1, with FF1 (radix 2)
// over a domain of at least 2^20 >= 10^6 and cycle walking down to the set. Length, the split of
// symbols between separators and the class of each symbol may change; the separators themselves,
// which gaps between them hold symbols, and the case style stay. Short outputs are short again,
// so Reconstruct tells the two schemes apart by the same domain rule (docs/techniques.md).

import type { Scalar } from '../../core/types.ts';
import type { FpeNumberJob, TweakCache } from './fpe-core.ts';
import { ValueError } from '../technique.ts';

/** Which ASCII classes a format lifts: digits (digits, phone, card), letters (name), both (text, email, iban). */
export type ShortClasses = 'digits' | 'letters' | 'alnum';

/**
 * The case style of a value's letters, kept by the short scheme: `none` (no letters), `lower`,
 * `title` (each gap's first letter upper, the others lower), `upper`, `mixed` (anything else).
 * Tested in that order, so `J` and `J R` are title, `JO` is upper.
 */
export type CaseStyle = 'none' | 'lower' | 'title' | 'upper' | 'mixed';

/** What a format hands over: the part of the text whose symbols are re-encrypted; the rest is kept. */
export interface ShortRegion {
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly classes: ShortClasses;
  /** Rewrites the rendered text (IBAN check digits, the Luhn digit of a card); identity by default. */
  readonly finish?: (text: string) => string;
  /** The value is a JSON number: the result must re-parse to exactly its text, and is returned as a number. */
  readonly isNumber?: boolean;
  /**
   * Sets the permutations of one of a format's paths apart from its others (a card's plain digits
   * from its middle digits, digits.ts), so a pseudonym on one path says nothing about the other.
   */
  readonly tweakLabel?: string;
}

/** Minimum domain of SP 800-38G Rev. 1, and the FF1 length (radix 2) that clears it. */
const MIN_DOMAIN = 1_000_000;
const MIN_BITS = 20;
/** The most symbols a short value can have: 10^5 < 10^6 (digits), 26^4 < 10^6 (letters), 26^2·10^3 (mixed). */
const MAX_SHORT: Readonly<Record<ShortClasses, number>> = { digits: 5, letters: 4, alnum: 5 };

/** A symbol's kind (numbers, not an enum: the loaders in use strip types only). */
type Kind = number;
const DIGIT = 0;
const LOWER = 1;
const UPPER = 2;
const OTHER = -1;

function kindOf(c: number, classes: ShortClasses): Kind {
  if (c >= 48 && c <= 57) return classes === 'letters' ? OTHER : DIGIT;
  if (classes === 'digits') return OTHER;
  if (c >= 97 && c <= 122) return LOWER;
  if (c >= 65 && c <= 90) return UPPER;
  return OTHER;
}

/** A short value taken apart: per symbol its kind and value (digit 0-9, letter 0-25), and the gap sizes. */
interface Parsed {
  readonly kinds: Kind[];
  readonly values: number[];
  /** Sizes of the gaps (runs between separators) that hold symbols, in order: a composition of k. */
  readonly parts: number[];
}

function parseRegion(region: ShortRegion): Parsed {
  const { text, start, end, classes } = region;
  const kinds: Kind[] = [];
  const values: number[] = [];
  const parts: number[] = [];
  let run = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    const kind = kindOf(c, classes);
    if (kind === OTHER) {
      if (run > 0) parts.push(run);
      run = 0;
      continue;
    }
    kinds.push(kind);
    values.push(kind === DIGIT ? c - 48 : kind === LOWER ? c - 97 : c - 65);
    run++;
  }
  if (run > 0) parts.push(run);
  return { kinds, values, parts };
}

/** The case style of symbols split into gaps (see CaseStyle). */
export function caseStyle(kinds: readonly Kind[], parts: readonly number[]): CaseStyle {
  let letters = 0;
  let uppers = 0;
  let title = true;
  let at = 0;
  for (const size of parts) {
    let first = true;
    for (let j = at; j < at + size; j++) {
      const kind = kinds[j];
      if (kind === DIGIT) continue;
      letters++;
      if (kind === UPPER) uppers++;
      if ((kind === UPPER) !== first) title = false;
      first = false;
    }
    at += size;
  }
  if (letters === 0) return 'none';
  if (uppers === 0) return 'lower';
  if (title) return 'title';
  return uppers === letters ? 'upper' : 'mixed';
}

/** One block of the ranked set: values with k symbols in one class layout and one split into gaps. */
interface Segment {
  readonly k: number;
  /** Bit j set: symbol j is a letter. */
  readonly layout: number;
  /** Symbols per non-empty gap. */
  readonly parts: readonly number[];
  readonly offset: number;
  /** Product of the symbols' radices (10 per digit, 26 or 52 per letter): the values in the block. */
  readonly product: number;
}

/** Whether some gap holds two letters or more: what an upper-case value needs (else it reads as title). */
function hasLetterPair(layout: number, parts: readonly number[]): boolean {
  let at = 0;
  for (const size of parts) {
    let letters = 0;
    for (let j = at; j < at + size; j++) letters += (layout >> j) & 1;
    if (letters >= 2) return true;
    at += size;
  }
  return false;
}

/**
 * The set a short value is permuted in: every value of up to MAX_SHORT symbols that the domain rule
 * calls short, split into the same number of gaps, with letters present exactly when the style has
 * them. Letters carry their case in the radix (52) only for the mixed style; otherwise the style
 * writes the case. Blocks that cannot carry the style are left out (upper needs a gap with two
 * letters, mixed two letters), so few ranks are walked past. Ranked block by block (size, layout,
 * split), then as a mixed-radix number.
 */
class ShortDomain {
  readonly segments: Segment[] = [];
  readonly #byShape = new Map<string, Segment>();
  readonly size: number;
  readonly bits: number;
  readonly letterRadix: number;

  constructor(
    readonly classes: ShortClasses,
    readonly style: CaseStyle,
    readonly gaps: number,
  ) {
    this.letterRadix = style === 'mixed' ? 52 : 26;
    let offset = 0;
    for (let k = gaps; k <= MAX_SHORT[classes]; k++) {
      const compositions = compositionsOf(k, gaps);
      for (let layout = 0; layout < 1 << k; layout++) {
        const letters = popcount(layout);
        if (classes === 'digits' && letters > 0) continue;
        if (classes === 'letters' && letters < k) continue;
        if ((style === 'none') !== (letters === 0)) continue;
        if (style === 'mixed' && letters < 2) continue;
        // The domain rule counts a letter as 26 whatever its case: this is what "short" means.
        if (26 ** letters * 10 ** (k - letters) >= MIN_DOMAIN) continue;
        const product = this.letterRadix ** letters * 10 ** (k - letters);
        for (const parts of compositions) {
          if (style === 'upper' && !hasLetterPair(layout, parts)) continue;
          const segment = { k, layout, parts, offset, product };
          this.segments.push(segment);
          this.#byShape.set(shapeKey(layout, parts), segment);
          offset += product;
        }
      }
    }
    this.size = offset;
    this.bits = Math.max(MIN_BITS, bitLength(offset - 1));
  }

  rank(parsed: Parsed): number {
    const { kinds, values, parts } = parsed;
    const k = kinds.length;
    let layout = 0;
    for (let j = 0; j < k; j++) if (kinds[j] !== DIGIT) layout |= 1 << j;
    const segment = this.#byShape.get(shapeKey(layout, parts));
    if (segment === undefined) throw new ValueError('FPE_DOMAIN_ERROR');
    let rank = 0;
    for (let j = 0; j < k; j++) {
      const letter = kinds[j] !== DIGIT;
      const radix = letter ? this.letterRadix : 10;
      const digit = letter && this.letterRadix === 52 ? values[j] * 2 + (kinds[j] === UPPER ? 1 : 0) : values[j];
      rank = rank * radix + digit;
    }
    return segment.offset + rank;
  }

  /** The symbols and gaps of rank r (r < size); letter case follows the style. */
  unrank(r: number): Parsed {
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.segments[mid].offset <= r) lo = mid;
      else hi = mid - 1;
    }
    const segment = this.segments[lo];
    let rest = r - segment.offset;
    const { k, layout } = segment;
    const kinds = new Array<Kind>(k);
    const values = new Array<number>(k);
    for (let j = k - 1; j >= 0; j--) {
      const letter = (layout >> j) & 1;
      const radix = letter ? this.letterRadix : 10;
      const q = Math.floor(rest / radix);
      const digit = rest - q * radix;
      rest = q;
      if (!letter) {
        kinds[j] = DIGIT;
        values[j] = digit;
      } else if (radix === 52) {
        kinds[j] = digit & 1 ? UPPER : LOWER;
        values[j] = digit >> 1;
      } else {
        kinds[j] = LOWER;
        values[j] = digit;
      }
    }
    const parts = segment.parts.slice();
    applyStyle(kinds, parts, this.style);
    return { kinds, values, parts };
  }
}

/** Writes the case a non-mixed style prescribes onto letters decoded without case. */
function applyStyle(kinds: Kind[], parts: readonly number[], style: CaseStyle): void {
  if (style === 'lower' || style === 'mixed' || style === 'none') return;
  let at = 0;
  for (const size of parts) {
    let first = true;
    for (let j = at; j < at + size; j++) {
      if (kinds[j] === DIGIT) continue;
      kinds[j] = style === 'upper' || first ? UPPER : LOWER;
      first = false;
    }
    at += size;
  }
}

/** A block's identity: its layout (with a leading 1 bit, so the length shows) and its split. */
function shapeKey(layout: number, parts: readonly number[]): string {
  let k = 0;
  for (const size of parts) k += size;
  return `${layout | (1 << k)}/${parts.join(',')}`;
}

function popcount(x: number): number {
  let n = 0;
  for (; x !== 0; x &= x - 1) n++;
  return n;
}

function bitLength(x: number): number {
  let n = 0;
  for (; x >= 1; x = Math.floor(x / 2)) n++;
  return n;
}

/** Every way to write k as an ordered sum of `parts` positive sizes, in lexicographic order. */
function compositionsOf(k: number, parts: number): number[][] {
  if (parts === 1) return [[k]];
  const out: number[][] = [];
  for (let first = 1; first <= k - parts + 1; first++) {
    for (const rest of compositionsOf(k - first, parts - 1)) out.push([first, ...rest]);
  }
  return out;
}

// Domains are small and few (classes × style × gaps): built once, shared by every field.
const domains = new Map<string, ShortDomain>();

function domainFor(classes: ShortClasses, style: CaseStyle, gaps: number): ShortDomain {
  const id = `${classes}/${style}/${gaps}`;
  let domain = domains.get(id);
  if (domain === undefined) {
    domain = new ShortDomain(classes, style, gaps);
    domains.set(id, domain);
  }
  return domain;
}

/** Char code of value 0 per kind (DIGIT, LOWER, UPPER). */
const BASE = [48, 97, 65];

/** The region's text with its symbols replaced by `next`: separators kept, each non-empty gap refilled. */
function render(region: ShortRegion, next: Parsed): string {
  const { text, start, end, classes } = region;
  let out = text.slice(0, start);
  let symbol = 0;
  let gap = 0;
  let inGap = false;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (kindOf(c, classes) === OTHER) {
      inGap = false;
      out += text[i];
      continue;
    }
    if (inGap) continue;
    inGap = true;
    for (let n = next.parts[gap++]; n > 0; n--, symbol++) out += String.fromCharCode(BASE[next.kinds[symbol]] + next.values[symbol]);
  }
  return out + text.slice(end);
}

/** A short value as an FF1 job on its rank (radix 2, cycle-walked into the ranked set). */
class ShortJob implements FpeNumberJob {
  readonly radix = 2;
  readonly length: number;
  readonly rank: number;

  constructor(
    private readonly region: ShortRegion,
    private readonly domain: ShortDomain,
    parsed: Parsed,
    readonly tweak: Uint8Array,
  ) {
    this.length = domain.bits;
    this.rank = domain.rank(parsed);
  }

  acceptRank(rank: number): boolean {
    if (rank >= this.domain.size) return false;
    const { style } = this.domain;
    if (style === 'upper' || style === 'mixed') {
      // The style decides how the value is read back: an upper value whose gaps all hold one letter
      // reads as title, a mixed one may read as any other style. Those ranks are walked past.
      const next = this.domain.unrank(rank);
      if (caseStyle(next.kinds, next.parts) !== style) return false;
    }
    return this.region.isNumber !== true || this.#numberText(rank) !== undefined;
  }

  renderRank(rank: number): Scalar {
    if (this.region.isNumber === true) {
      const text = this.#numberText(rank);
      if (text === undefined) throw new ValueError('FPE_DOMAIN_ERROR');
      return Number(text);
    }
    return this.#text(rank);
  }

  #text(rank: number): string {
    const text = render(this.region, this.domain.unrank(rank));
    return this.region.finish === undefined ? text : this.region.finish(text);
  }

  /** The number text of a rank when it reads back as exactly that number (no leading or trailing zero). */
  #numberText(rank: number): string | undefined {
    const text = this.#text(rank);
    return String(Number(text)) === text ? text : undefined;
  }
}

/** Values with no symbol in the region: nothing personal to replace, so they are their own pseudonym. */
export class KeptValue {
  constructor(readonly value: Scalar) {}
}

/**
 * The short-value job for a region (see the module comment), or KeptValue when the region holds
 * no symbol at all (the short set never does, so Reconstruct keeps those too).
 */
export function shortJob(region: ShortRegion, value: Scalar, tweaks: TweakCache): ShortJob | KeptValue {
  const parsed = parseRegion(region);
  const k = parsed.kinds.length;
  if (k === 0) return new KeptValue(value);
  const style = region.classes === 'digits' ? 'none' : caseStyle(parsed.kinds, parsed.parts);
  const domain = domainFor(region.classes, style, parsed.parts.length);
  return new ShortJob(region, domain, parsed, tweaks.forShort(`${region.tweakLabel ?? ''}${region.classes}/${style}/${parsed.parts.length}`));
}
