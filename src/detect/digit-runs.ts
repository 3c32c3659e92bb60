// Numbers written as runs of digit groups (`4111 1111 1111 1111`, `(415) 555-0132`, `123-45-6789`,
// `192.0.2.10`, `+44 20 7946 0958`): read once into groups and separators, then the longest run of
// consecutive groups that one kind accepts is taken, in the order card, ssn, phone, ipAddress.
// Groups join over one space, `-`, `.`, or a bracket around a group; anything else ends the run.
// Typographic spaces (no-break, thin, narrow no-break…) count as spaces and typographic dashes
// (hyphen, figure dash, en and em dash, minus sign) as `-`.
//
// Linear time, whatever the text: a value spans at most 19 groups (19 digits), so groups are read
// through a sliding window — once it holds WINDOW groups, every start that has its next 20 groups in
// view is classified and the groups before the next start are dropped. Each start is checked
// against the few groupings its kinds allow (a card starts with a group of 4 or of 12-19 digits, an
// SSN is 3-2-4…), so a run of hostile groups (`1 1 1 …`, `4 4 4 …`) costs a few comparisons per group.

import { CARD_MAX_DIGITS, CARD_MIN_DIGITS, CARD_PREFIX_DIGITS, hasCardPrefixFor } from './card.ts';
import { CLASS, DIGIT, WORD, classAt, isGroupDash, isGroupSpace } from './chars.ts';
import type { DetectKind, DetectedSpan } from './kinds.ts';
import { E164_MAX_DIGITS, E164_MIN_DIGITS, isNanpDigits, startsCountryCode } from './phone.ts';
import { isSsnDigits } from './ssn.ts';

const SPACE = 1;
const DASH = 2;
const DOT = 3;
/** A separator with a bracket in it: `) `, `)-`, ` (`, `(`, `)`. */
const BRACKET = 4;

/** The most digits any kind takes (`00` + 15 international digits, or a 19-digit card). */
const MAX_SPAN_DIGITS = 19;
/** Groups a start needs in view to be classified: the longest value (19 groups) and one separator after it. */
const LOOKAHEAD = MAX_SPAN_DIGITS + 1;
/** Groups held before the window slides. */
const WINDOW = 64;

/** Which digit-run kinds a scanner looks for. */
export interface DigitKinds {
  readonly card: boolean;
  readonly ssn: boolean;
  readonly phone: boolean;
  readonly ipv4: boolean;
}

/** Reused between calls: the groups of the run being read (a window of it, for long runs). */
class Run {
  /** Group k covers text[start[k], end[k]); sep[k] is the separator before group k (0 for the run's first). */
  readonly start = new Int32Array(WINDOW);
  readonly end = new Int32Array(WINDOW);
  readonly sep = new Uint8Array(WINDOW);
  /** Group k is written inside brackets (1). */
  readonly bracketed = new Uint8Array(WINDOW);
  /**
   * Group k's share of a Luhn sum: luhnEven[k] when an even number of digits follow it in the
   * number (its last digit not doubled), luhnOdd[k] otherwise; a card's check then costs one
   * addition per group, not one per digit, however many candidates share the group.
   */
  readonly luhnEven = new Uint16Array(WINDOW);
  readonly luhnOdd = new Uint16Array(WINDOW);
  /** The run starts with `+` (just before group 0, while group 0 is the run's first). */
  plus = false;
  /** Where the run's text starts: `+` or `(`, else group 0. */
  textStart = 0;
  count = 0;

  reset(): void {
    this.count = 0;
    this.plus = false;
  }

  push(start: number, end: number, sep: number, bracketed: boolean): void {
    const k = this.count++;
    this.start[k] = start;
    this.end[k] = end;
    this.sep[k] = sep;
    this.bracketed[k] = bracketed ? 1 : 0;
    this.luhnEven[k] = LUHN_UNKNOWN;
  }

  /** Computes group k's Luhn shares on first use (most groups never reach a card check). */
  luhn(text: string, k: number, odd: boolean): number {
    if (this.luhnEven[k] === LUHN_UNKNOWN) {
      let even = 0;
      let oddSum = 0;
      let doubled = false;
      for (let i = this.end[k] - 1; i >= this.start[k]; i--) {
        const d = text.charCodeAt(i) - 48;
        if (doubled) ((even += LUHN_DOUBLE[d]), (oddSum += d));
        else ((even += d), (oddSum += LUHN_DOUBLE[d]));
        doubled = !doubled;
      }
      this.luhnEven[k] = even;
      this.luhnOdd[k] = oddSum;
    }
    return odd ? this.luhnOdd[k] : this.luhnEven[k];
  }

  /** Drops groups [0, n): group n becomes group 0. */
  shift(n: number): void {
    if (n <= 0) return;
    this.start.copyWithin(0, n, this.count);
    this.end.copyWithin(0, n, this.count);
    this.sep.copyWithin(0, n, this.count);
    this.bracketed.copyWithin(0, n, this.count);
    this.luhnEven.copyWithin(0, n, this.count);
    this.luhnOdd.copyWithin(0, n, this.count);
    this.count = Math.max(0, this.count - n);
    this.plus = false;
  }
}

/** A digit doubled for the Luhn check, its digits summed. */
const LUHN_DOUBLE = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9];
/** Marks a group whose Luhn shares are not computed yet (no group of ≤ 19 digits sums to this). */
const LUHN_UNKNOWN = 0xffff;

const run = new Run();

/**
 * Steps taken so far: groups read, starts classified, groupings tried. Tests count these to show
 * the scan is linear (a clock on a shared machine cannot); nothing else reads them.
 */
export const digitRunSteps = { count: 0 };

function isDigit(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  return c >= 48 && c <= 57;
}

function digitsEnd(text: string, i: number): number {
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) break;
    i++;
  }
  return i;
}

/** The separator a character makes between two digit groups: SPACE, DASH, DOT, or 0 (none). */
function separatorOf(c: number): number {
  if (c === 46) return DOT;
  return isGroupSpace(c) ? SPACE : isGroupDash(c) ? DASH : 0;
}

/**
 * Reads the run of digit groups starting at `i` (a digit whose previous character is not a digit),
 * adds the spans it holds to `out`, and returns where scanning goes on.
 */
export function scanDigitRun(text: string, i: number, kinds: DigitKinds, out: DetectedSpan[]): number {
  run.reset();
  let textStart = i;
  let openBracket = false;
  const before = text.charCodeAt(i - 1);
  if (before === 43 /* + */) {
    run.plus = true;
    textStart = i - 1;
  } else if (before === 40 /* ( */) {
    openBracket = true;
    textStart = i - 1;
  }
  // A digit glued to a word (`ID4111…`, `x_1`) starts no value: skip the whole digit run.
  if (classAt(text, textStart - 1) & WORD || isDecimalTail(text, textStart)) {
    return skipWordRun(text, i);
  }
  run.textStart = textStart;
  let slid = false;
  let sep = 0;
  let at = i;
  for (;;) {
    const end = digitsEnd(text, at);
    let bracketed = false;
    let next = end;
    if (openBracket) {
      if (text.charCodeAt(end) === 41 /* ) */) {
        bracketed = true;
        next = end + 1;
      } else if (run.count === 0) {
        // `(4111 1111 …`: an opening bracket never closed is punctuation before the run.
        run.textStart = at;
      } else break;
    }
    run.push(at, end, sep, bracketed);
    digitRunSteps.count++;
    openBracket = false;
    if (run.count >= WINDOW) {
      // Classify every start whose longest possible value (and the separator after it) is in view.
      run.shift(classifyRun(text, kinds, out, run.count - LOOKAHEAD));
      slid = true;
    }
    // The separator before the next group.
    const c0 = text.charCodeAt(next);
    const kind0 = separatorOf(c0);
    let nextStart = -1;
    if (bracketed) {
      if (isDigit(text, next)) ((sep = BRACKET), (nextStart = next));
      else if ((kind0 === SPACE || kind0 === DASH) && isDigit(text, next + 1)) ((sep = BRACKET), (nextStart = next + 1));
    } else if (kind0 !== 0) {
      if (isDigit(text, next + 1)) {
        sep = kind0;
        nextStart = next + 1;
      } else if (text.charCodeAt(next + 1) === 40 && (kind0 === SPACE || kind0 === DASH) && isDigit(text, next + 2)) {
        sep = BRACKET;
        openBracket = true;
        nextStart = next + 2;
      }
    } else if (c0 === 40 && isDigit(text, next + 1)) {
      sep = BRACKET;
      openBracket = true;
      nextStart = next + 1;
    }
    if (nextStart < 0) break;
    at = nextStart;
  }
  const last = run.count - 1;
  let resume = run.bracketed[last] ? run.end[last] + 1 : run.end[last];
  // A last group glued to a word (`… 0132 5pm`, `4111…abc`) is not part of any value.
  if (classAt(text, resume) & WORD) {
    resume = skipWordRun(text, resume);
    run.count--;
    if (run.count === 0) return resume;
  }
  // Too few digits for any kind (an IPv4 address has four groups, everything else 9+ digits).
  if (!slid && !run.plus && run.count < 4 && run.end[run.count - 1] - run.start[0] < 9) return resume;
  classifyRun(text, kinds, out, run.count);
  return resume;
}

/** `3.14159…`: digits after a decimal point belong to the number before. */
function isDecimalTail(text: string, start: number): boolean {
  return text.charCodeAt(start - 1) === 46 && (classAt(text, start - 2) & DIGIT) !== 0;
}

function skipWordRun(text: string, i: number): number {
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c >= 128 || (CLASS[c] & WORD) === 0) break;
    i++;
  }
  return i;
}

/**
 * Tries, from each group a < `limit` on, the kinds in order; takes the longest run of groups one
 * accepts and goes on after it. Returns the first group not yet classified.
 */
function classifyRun(text: string, kinds: DigitKinds, out: DetectedSpan[], limit: number): number {
  let a = 0;
  while (a < limit) {
    digitRunSteps.count++;
    // A value starting inside the run must follow a space or a bracket: after a dot it is the tail
    // of a decimal or a version (`3.14159…`), after a dash the tail of something else
    // (`4341-0066 9014-9015`) — except a card not itself written with dashes (`12-4111111111111111`):
    // its issuer prefix, length and Luhn check are evidence enough.
    const sep = run.sep[a];
    let b = -1;
    let kind: DetectKind = 'card';
    if (cannotStart(text, a)) {
      // the common case in digit-heavy text: nothing of any kind starts with this group
    } else if (sep === DOT) {
      // nothing starts here
    } else if (sep === DASH) {
      if (kinds.card) b = cardAt(text, a, true);
    } else {
      if (kinds.card) b = cardAt(text, a, false);
      if (b < 0 && kinds.ssn && (b = ssnAt(text, a)) >= 0) kind = 'ssn';
      if (b < 0 && kinds.phone && (b = phoneAt(text, a)) >= 0) kind = 'phone';
      if (b < 0 && kinds.ipv4 && (b = ipv4At(text, a)) >= 0) kind = 'ipAddress';
    }
    if (b < 0) {
      a++;
      continue;
    }
    // Brackets belong to a value of several groups (`(415) 555-0132`), not to one group in brackets.
    const start = a === 0 && run.plus ? run.textStart : run.bracketed[a] && b > a ? run.start[a] - 1 : run.start[a];
    const end = run.bracketed[b] && b > a ? run.end[b] + 1 : run.end[b];
    out.push({ start, end, kind });
    a = b + 1;
  }
  return a;
}

/**
 * A cheap test that no kind can start at group a: cards start with 4 or 12-19 digits, SSNs and
 * NANP numbers with 3, phones otherwise with `+`, `0…` or a `1` group, IPv4 addresses with 1-3
 * digits before a dot.
 */
function cannotStart(text: string, a: number): boolean {
  const s = run.end[a] - run.start[a];
  if (s > 2) return false;
  if (a === 0 && run.plus) return false;
  if (a + 1 < run.count && run.sep[a + 1] === DOT) return false;
  const c = text.charCodeAt(run.start[a]);
  return s === 1 ? c !== 49 /* 1 */ || a + 1 >= run.count || size(a + 1) !== 3 : c !== 48; /* 0 */
}

function size(k: number): number {
  return run.end[k] - run.start[k];
}

/** The digits of groups a..b, separators dropped. */
function digitsOf(text: string, a: number, b: number): string {
  if (a === b) return text.slice(run.start[a], run.end[a]);
  let digits = '';
  for (let k = a; k <= b; k++) digits += text.slice(run.start[k], run.end[k]);
  return digits;
}

/** The `n` digits after the first `skip` digits from group a on, as a number (the run has them). */
function digitsAfter(text: string, a: number, skip: number, n: number): number {
  let value = 0;
  for (let k = a; n > 0; k++) {
    for (let i = run.start[k]; i < run.end[k] && n > 0; i++) {
      if (skip > 0) skip--;
      else {
        value = value * 10 + text.charCodeAt(i) - 48;
        n--;
      }
    }
  }
  return value;
}

/** A value other than an IPv4 address never ends just before a dot: `1.5` would be a decimal. */
function endsBeforeDot(b: number): boolean {
  return b + 1 < run.count && run.sep[b + 1] === DOT;
}

/** Same separator between all groups a..b (SPACE, DASH…), 0 for one group, -1 when mixed. */
function commonSeparator(a: number, b: number): number {
  if (a === b) return 0;
  const s = run.sep[a + 1];
  for (let k = a + 2; k <= b; k++) if (run.sep[k] !== s) return -1;
  return s;
}

function hasBracket(a: number, b: number): boolean {
  for (let k = a; k <= b; k++) if (run.bracketed[k]) return true;
  return false;
}

/**
 * The last group of the longest card starting at group a, or -1. Written together (one group of
 * 12-19 digits), in groups of four (the last 1-4 digits), or 4-6-5 / 4-6-4, one separator (space or
 * dash) throughout. `afterDash`: the group follows a dash that is not part of the card, so the card
 * may not use dashes itself.
 */
function cardAt(text: string, a: number, afterDash: boolean): number {
  if (a === 0 && run.plus) return -1;
  const first = size(a);
  if (first >= CARD_MIN_DIGITS) {
    if (first > CARD_MAX_DIGITS || endsBeforeDot(a)) return -1;
    return isCardNumber(text, a, a, first, leadingSix(text, a)) ? a : -1;
  }
  // Grouped: a group of four, then groups of four (the last 1-4 digits) or 6 then 5/4, one
  // separator (space or dash), no brackets.
  if (first !== 4 || run.bracketed[a] || a + 2 >= run.count) return -1;
  const sep = run.sep[a + 1];
  if ((sep !== SPACE && sep !== DASH) || (afterDash && sep === DASH)) return -1;
  const second = size(a + 1);
  if (second !== 4 && second !== 6) return -1;
  const head6 = leadingSix(text, a);
  // Groups of four after the first, with the same separator: fours = how many (at most 3 count).
  let fours = 0;
  while (fours < 3 && sameGroupSeparator(a + 1 + fours, sep) && size(a + 1 + fours) === 4) fours++;
  // Longest first: 4-4-4-4-(1..3) (17-19), 4-4-4-(1..4) (13-16), 4-6-(5|4) (15, 14), 4-4-4 (12).
  for (let b = a + fours + 1; b >= a + 2; b--) {
    digitRunSteps.count++;
    if (b > a + 4 || !sameGroupSeparator(b, sep) || endsBeforeDot(b)) continue;
    const last = size(b);
    const length = 4 * (b - a) + last;
    if (last > 4 || (b === a + 4 && last > 3) || length < CARD_MIN_DIGITS) continue;
    if (isCardNumber(text, a, b, length, head6)) return b;
  }
  if (second === 6 && sameGroupSeparator(a + 2, sep) && !endsBeforeDot(a + 2)) {
    const last = size(a + 2);
    if ((last === 5 || last === 4) && isCardNumber(text, a, a + 2, 10 + last, head6)) return a + 2;
  }
  return -1;
}

/** Group k exists, follows separator `sep` and is not in brackets. */
function sameGroupSeparator(k: number, sep: number): boolean {
  return k < run.count && run.sep[k] === sep && run.bracketed[k] === 0;
}

/** The first six digits from group a on, as a number (a card's issuer prefix is among them). */
function leadingSix(text: string, a: number): number {
  let head = 0;
  let taken = 0;
  for (let k = a; k < run.count && taken < CARD_PREFIX_DIGITS; k++) {
    const end = run.end[k];
    for (let i = run.start[k]; i < end && taken < CARD_PREFIX_DIGITS; i++, taken++) head = head * 10 + text.charCodeAt(i) - 48;
  }
  return head;
}

/**
 * Groups a..b (`length` digits, starting with `head6`) have a brand prefix for that length and pass
 * Luhn. Nothing is built from the text: this runs for every group of a digit-heavy text.
 */
function isCardNumber(text: string, a: number, b: number, length: number, head6: number): boolean {
  if (!hasCardPrefixFor(head6, length)) return false;
  let sum = 0;
  let after = 0;
  for (let k = b; k >= a; k--) {
    sum += run.luhn(text, k, (after & 1) === 1);
    after += size(k);
  }
  return sum % 10 === 0;
}

/** `ddd-dd-dddd` or `ddd dd dddd` starting at group a: its last group, or -1. */
function ssnAt(text: string, a: number): number {
  const b = a + 2;
  if (b >= run.count || (a === 0 && run.plus) || size(a) !== 3 || size(a + 1) !== 2 || size(b) !== 4) return -1;
  if (hasBracket(a, b) || endsBeforeDot(b)) return -1;
  const sep = commonSeparator(a, b);
  if (sep !== SPACE && sep !== DASH) return -1;
  return isSsnDigits(digitsOf(text, a, b)) ? b : -1;
}

/** The last group of the longest phone number starting at group a, or -1. */
function phoneAt(text: string, a: number): number {
  if (a === 0 && run.plus) return internationalAt(text, a, 0);
  const first = size(a);
  const c = text.charCodeAt(run.start[a]);
  if (c === 48 /* 0 */) {
    if (first < 2) return -1;
    // `00` and a country code; otherwise a trunk 0 and a national number.
    return text.charCodeAt(run.start[a] + 1) === 48 ? internationalAt(text, a, 2) : trunkNationalAt(text, a);
  }
  // NANP: [1] area exchange line, in groups 3-3-4 (after a group `1`).
  if (first === 1 && c === 49 /* 1 */ && a + 3 < run.count && size(a + 1) === 3) return nanpAt(text, a + 1);
  if (first === 3) return nanpAt(text, a);
  return -1;
}

/**
 * International numbers: after `+` (prefix 0) or `00` (prefix 2, at least one more group), a
 * country code and 8-15 digits in all; dots only as the one separator throughout.
 */
function internationalAt(text: string, a: number, prefix: number): number {
  let digits = 0;
  let anyDot = false;
  let allDots = true;
  let best = -1;
  let countryChecked = false;
  for (let b = a; b < run.count; b++) {
    digitRunSteps.count++;
    digits += size(b);
    if (digits > MAX_SPAN_DIGITS || digits - prefix > E164_MAX_DIGITS) break;
    if (b > a) {
      if (run.sep[b] === DOT) anyDot = true;
      else allDots = false;
    }
    const national = digits - prefix;
    if (national < E164_MIN_DIGITS || (prefix > 0 && b === a)) continue;
    if (!countryChecked) {
      // The country code is in the first digits after the prefix, whatever the grouping.
      if (!startsCountryCode(digitsAfter(text, a, prefix, 2))) return -1;
      countryChecked = true;
    }
    const mixesDots = anyDot && !(b > a && allDots);
    if (!mixesDots && !endsBeforeDot(b)) best = b;
  }
  return best;
}

/** A national number with a trunk 0: 10-11 digits in two or more groups of 2-8. */
function trunkNationalAt(text: string, a: number): number {
  let digits = 0;
  let best = -1;
  const firstSep = run.sep[a + 1];
  for (let b = a; b < run.count; b++) {
    digitRunSteps.count++;
    const s = size(b);
    if (s < 2 || s > 8) break;
    digits += s;
    if (digits > 11) break;
    if (b > a && run.sep[b] === DOT && firstSep !== DOT) break;
    if (b > a && digits >= 10 && !run.bracketed[b] && !endsBeforeDot(b)) best = b;
  }
  return best;
}

/** NANP: the groups k (area), k + 1 (exchange), k + 2 (line); k may follow a group `1`. */
function nanpAt(text: string, k: number): number {
  const b = k + 2;
  if (b >= run.count || size(k) !== 3 || size(k + 1) !== 3 || size(b) !== 4 || endsBeforeDot(b)) return -1;
  if (!isNanpDigits(digitsOf(text, k, b))) return -1;
  const last = run.sep[b];
  if (last === BRACKET) return -1;
  // Brackets only around the area code: `(415) 555-0132`, `1 (415) 555-0132`.
  if (run.bracketed[k]) return !run.bracketed[k + 1] && !run.bracketed[b] ? b : -1;
  return !hasBracket(k, b) && run.sep[k + 1] === last ? b : -1;
}

/** Four dotted groups of 0-255 without leading zeros, not part of a longer dotted run. */
function ipv4At(text: string, a: number): number {
  const b = a + 3;
  if (b >= run.count || size(a) > 3 || run.sep[a + 1] !== DOT || (a === 0 && run.plus)) return -1;
  if (hasBracket(a, b) || commonSeparator(a, b) !== DOT) return -1;
  // The address is a whole dotted stretch: `1.2.3.4.5` is a version number.
  if (endsBeforeDot(b)) return -1;
  for (let k = a; k <= b; k++) {
    const s = size(k);
    if (s > 3) return -1;
    if (s > 1 && text.charCodeAt(run.start[k]) === 48) return -1;
    if (Number(text.slice(run.start[k], run.end[k])) > 255) return -1;
  }
  return b;
}
