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

import { CARD_MAX_DIGITS, CARD_MIN_DIGITS, CARD_PREFIX_DIGITS, hasCardPrefixFor, isGtinDigits } from './card.ts';
import { CLASS, DIGIT, UPPER, WORD, classAt, isGroupDash, isGroupSpace } from './chars.ts';
import type { DetectKind, DetectedSpan } from './kinds.ts';
import { E164_MAX_DIGITS, E164_MIN_DIGITS, isNanpDigits, startsCountryCode } from './phone.ts';
import { internationalValid, type PhoneRegions } from './phone-regions.ts';
import { bareNumberRefused } from './context.ts';
import { isSsnDigits, ssnContextBefore } from './ssn.ts';
import { prefixLengthEnd } from './ip.ts';

const SPACE = 1;
const DASH = 2;
const DOT = 3;
/** A separator with a bracket in it: `) `, `)-`, ` (`, `(`, `)`. */
const BRACKET = 4;

/** The most digits any kind takes (`00` + 15 international digits, or a 19-digit card). */
const MAX_SPAN_DIGITS = 19;
/** Groups a start needs in view to be classified: the longest value (19 groups) and one separator after it. */
const LOOKAHEAD = MAX_SPAN_DIGITS + 1;
/** The fewest digits of an international number (country code included) whose plan says it is valid. */
const SHORT_INTERNATIONAL_DIGITS = 6;
/** Groups held before the window slides. */
const WINDOW = 64;

/** Which digit-run kinds a scanner looks for. */
export interface DigitKinds {
  readonly card: boolean;
  readonly ssn: boolean;
  readonly phone: boolean;
  readonly ipv4: boolean;
  /** National numbering plans to read national phone writings with; undefined: the region-free rules. */
  readonly regions?: PhoneRegions;
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
  /** The run follows a dash glued to a word (`ORD-2026…`). */
  afterWordDash = false;
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
    this.afterWordDash = false;
  }
}

/** A digit doubled for the Luhn check, its digits summed. */
const LUHN_DOUBLE = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9];
/** Marks a group whose Luhn shares are not computed yet (no group of ≤ 19 digits sums to this). */
const LUHN_UNKNOWN = 0xffff;

const run = new Run();
/** The national numbering plans of the scan under way (set by scanDigitRun). */
let regions: PhoneRegions | undefined;
/** The last group of the value classifyRun took last in this run, -1 for none. */
let lastValueEnd = -1;

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
  regions = kinds.regions;
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
  run.afterWordDash = isGroupDash(text.charCodeAt(textStart - 1)) && (classAt(text, textStart - 2) & WORD) !== 0;
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
  const lastGroup = run.count - 1;
  let resume = run.bracketed[lastGroup] ? run.end[lastGroup] + 1 : run.end[lastGroup];
  // A last group glued to a word (`… 0132 5pm`, `4111…abc`) is not part of any value.
  if (classAt(text, resume) & WORD) {
    resume = skipWordRun(text, resume);
    run.count--;
    if (run.count === 0) return resume;
  }
  // Too few digits for any kind (an IPv4 address has four groups, everything else 9+ digits).
  if (!slid && !run.plus && run.count < 4 && run.end[run.count - 1] - run.start[0] < 9) return resume;
  // The rest of an IBAN-like code (`FO90 0073 8507 0140 92` with a wrong check) or an ISBN
  // (`0-307-00982-3`): no value is read in it.
  if (!slid && (continuesCode(text, run.textStart) || isIsbnRun(text))) return resume;
  const found = out.length;
  classifyRun(text, kinds, out, run.count);
  // `192.168.1.0/24`: a prefix length after an address is part of it (it would stay in clear).
  const last = out.length > found ? out[out.length - 1] : undefined;
  if (last !== undefined && last.kind === 'ipAddress' && last.end === resume) {
    const end = prefixLengthEnd(text, resume, 32);
    if (end > resume) {
      out[out.length - 1] = { start: last.start, end, kind: 'ipAddress' };
      resume = end;
    }
  }
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
  lastValueEnd = -1;
  while (a < limit) {
    digitRunSteps.count++;
    // A value starting inside the run must follow a space or a bracket: after a dot it is the tail
    // of a decimal or a version (`3.14159…`), after a dash the tail of something else
    // (`4341-0066 9014-9015`) — except a card not itself written with dashes (`12-4111111111111111`):
    // its issuer prefix, length and Luhn check are evidence enough.
    // A run glued by a dash to a word (`ORD-2026-967273`) is the tail of an id: as after a dash.
    const sep = a === 0 && run.afterWordDash ? DASH : run.sep[a];
    let b = -1;
    let kind: DetectKind = 'card';
    if (cannotStart(text, a)) {
      // the common case in digit-heavy text: nothing of any kind starts with this group
    } else if (insideFours(a)) {
      // the middle of a long number written in fours (a tracking number): nothing starts here
    } else if (sep === DOT) {
      // nothing starts here
    } else if (sep === DASH || isIsoDate(text, a)) {
      if (kinds.card) b = cardAt(text, a, sep === DASH);
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
    lastValueEnd = b;
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
  // National writings: `8 (912) 345-67-89`, `(11) 96123-4567`.
  if (regions !== undefined && (s === 1 ? a + 1 < run.count && run.bracketed[a + 1] === 1 : run.bracketed[a] === 1)) return false;
  return s === 1 ? c !== 49 /* 1 */ || a + 1 >= run.count || size(a + 1) !== 3 : c !== 48; /* 0 */
}

/** Group a follows two groups of four (with the same separator) that no value took. */
function insideFours(a: number): boolean {
  return a >= 1 && lastValueEnd < a - 1 && size(a - 1) === 4 && size(a) === 4 && a + 1 < run.count && run.sep[a + 1] === run.sep[a] && run.bracketed[a - 1] === 0;
}

/** Groups a.. are an ISO date (`2026-03-16`): nothing but a card starts there. */
function isIsoDate(text: string, a: number): boolean {
  if (a + 2 >= run.count || size(a) !== 4 || size(a + 1) !== 2 || size(a + 2) !== 2 || run.sep[a + 1] !== DASH || run.sep[a + 2] !== DASH) return false;
  const year = digitsAfter(text, a, 0, 4);
  return year >= 1900 && year <= 2099;
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
    if (first > CARD_MAX_DIGITS || endsBeforeDot(a) || isGtinDigits(text, run.start[a], run.end[a])) return -1;
    return isCardNumber(text, a, a, first, leadingSix(text, a)) ? a : -1;
  }
  // Grouped: a group of four, then groups of four (the last 1-4 digits) or 6 then 5/4, one
  // separator (space or dash), no brackets.
  if (first !== 4 || run.bracketed[a] || a + 2 >= run.count) return -1;
  const sep = run.sep[a + 1];
  if ((sep !== SPACE && sep !== DASH) || (afterDash && sep === DASH)) return -1;
  // Inside a longer number written in fours (a tracking number, an IBAN's digits): not a card.
  if (a > 0 && run.sep[a] === sep && size(a - 1) === 4 && a - 1 !== lastValueEnd) return -1;
  const second = size(a + 1);
  if (second !== 4 && second !== 6 && second !== 5) return -1;
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
  // 4-5-6: UATP.
  if (second === 5) return sameGroupSeparator(a + 2, sep) && size(a + 2) === 6 && !endsBeforeDot(a + 2) && isCardNumber(text, a, a + 2, 15, head6) ? a + 2 : -1;
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

/** `ddd-dd-dddd`, `ddd dd dddd` or `ddd.dd.dddd` starting at group a (nine digits after a context word): its last group, or -1. */
function ssnAt(text: string, a: number): number {
  // Nine bare digits right after an SSN context word (`SSN 123456789`, `"ssn": "123456789"`).
  if (a === 0 && size(a) === 9 && !run.plus && !run.bracketed[a] && !endsBeforeDot(a)) {
    return ssnContextBefore(text, run.textStart) && isSsnDigits(digitsOf(text, a, a)) ? a : -1;
  }
  const b = a + 2;
  if (b >= run.count || (a === 0 && run.plus) || size(a) !== 3 || size(a + 1) !== 2 || size(b) !== 4) return -1;
  if (hasBracket(a, b) || endsBeforeDot(b)) return -1;
  const sep = commonSeparator(a, b);
  if (sep !== SPACE && sep !== DASH && sep !== DOT) return -1;
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
    if (text.charCodeAt(run.start[a] + 1) === 48) return internationalAt(text, a, 2);
    return regions === undefined ? trunkNationalAt(text, a) : regionalAt(text, a);
  }
  // A bare number: ten NANP digits (`4155550132`, `14155550132`), or a configured region's.
  if (first >= 10 && (a + 1 >= run.count || run.sep[a + 1] !== DOT)) return bareAt(text, a) ? a : -1;
  // NANP: [1] area exchange line, in groups 3-3-4 (after a group `1`).
  let b = -1;
  if (first === 1 && c === 49 /* 1 */ && a + 3 < run.count && size(a + 1) === 3) b = nanpAt(text, a + 1);
  else if (first === 3) b = nanpAt(text, a);
  return b < 0 && regions !== undefined ? regionalAt(text, a) : b;
}

/**
 * One group of 10+ digits: a NANP number (ten digits, or eleven after a `1`) or a valid number of a
 * configured region not starting with a trunk `0`, unless the word before says it is something
 * else (`ISBN`, `order`, `#`…).
 */
function bareAt(text: string, a: number): boolean {
  const first = size(a);
  if (run.bracketed[a] === 0 && a > 0 && run.sep[a] !== SPACE) return false;
  // A number in a path (`/items/4155550132`) is an id.
  if (a === 0 && text.charCodeAt(run.textStart - 1) === 47 /* / */) return false;
  const digits = digitsOf(text, a, a);
  let ok = false;
  if (first === 10) ok = isNanpDigits(digits);
  else if (first === 11 && digits.charCodeAt(0) === 49) ok = isNanpDigits(digits.slice(1));
  // Other regions' numbers as one bare group: eleven digits only (`13812345678`); ten are NANP's and
  // epoch timestamps, twelve and thirteen tracking numbers and barcodes.
  if (!ok && regions !== undefined && first === 11 && digits.charCodeAt(0) !== 48) ok = regions.nationalValid(digits);
  return ok && !bareNumberRefused(text, a === 0 ? run.textStart : run.start[a]);
}

/**
 * A national writing of a configured region: two to six groups (the first may be one digit before a
 * bracketed area code, the others 2-8 digits), no dots, the digits a valid number of the region.
 */
function regionalAt(text: string, a: number): number {
  const plans = regions!;
  let digits = '';
  let best = -1;
  let sep = 0;
  for (let b = a; b < run.count && b < a + 6; b++) {
    const s = size(b);
    if (s > 8 || (b > a && (s < 2 || run.sep[b] === DOT))) break;
    // One separator throughout, brackets around a group aside (`8 (912) 345-67-89`).
    if (b > a && run.sep[b] !== BRACKET) {
      if (sep !== 0 && run.sep[b] !== sep) break;
      sep = run.sep[b];
    }
    digits += text.slice(run.start[b], run.end[b]);
    if (digits.length > plans.maxDigits) break;
    if (b === a || digits.length < 7 || (run.bracketed[b] && b > a) || endsBeforeDot(b)) continue;
    if (plans.nationalValid(digits)) best = b;
  }
  return best;
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
    // Fewer than 8 digits: only a number valid in its country's plan (`+290 8912`, Saint Helena).
    if (national < SHORT_INTERNATIONAL_DIGITS) continue;
    const short = national < E164_MIN_DIGITS;
    if (!countryChecked) {
      // The country code is in the first digits after the prefix, whatever the grouping.
      if (!startsCountryCode(digitsAfter(text, a, prefix, 2))) return -1;
      countryChecked = true;
    }
    const mixesDots = anyDot && !(b > a && allDots);
    if (mixesDots || endsBeforeDot(b)) continue;
    // `00` and the number as one group is weaker evidence than `+` (order numbers start with
    // `00`): at most 13 digits after it, and a valid number of its country.
    if (prefix > 0 && b === a && national > 13) continue;
    if (((prefix > 0 && b === a) || short) && !internationalValid(digitsOf(text, a, b).slice(prefix))) continue;
    best = b;
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

/**
 * The run starts right after the groups of an IBAN-like code: `XX00` (two capitals, two digits) and
 * groups of four letters or digits, each followed by the same one space or dash.
 */
function continuesCode(text: string, start: number): boolean {
  const sep = text.charCodeAt(start - 1);
  if (sep !== 32 && sep !== 45 && sep !== 0xa0) return false;
  for (let end = start - 1, k = 0; k < 8 && end >= 4; k++, end -= 5) {
    for (let i = end - 4; i < end; i++) if ((classAt(text, i) & (DIGIT | UPPER)) === 0) return false;
    const at = end - 4;
    if ((classAt(text, at) & UPPER) !== 0 && (classAt(text, at + 1) & UPPER) !== 0 && (classAt(text, at + 2) & DIGIT) !== 0 && (classAt(text, at + 3) & DIGIT) !== 0 && (classAt(text, at - 1) & WORD) === 0) return true;
    if (text.charCodeAt(at - 1) !== sep) return false;
  }
  return false;
}

/** The whole run is an ISBN written with dashes or spaces (`978-0-306-40615-7`, `0-307-00982-3`) whose check digit holds. */
function isIsbnRun(text: string): boolean {
  // Group, publisher, title and a one-digit check (ISBN-13: a 978/979 prefix group first).
  if (run.count < 4 || run.count > 5 || run.plus || size(run.count - 1) !== 1) return false;
  const sep = run.sep[1];
  if (sep !== DASH && sep !== SPACE) return false;
  for (let k = 2; k < run.count; k++) if (run.sep[k] !== sep) return false;
  const digits = digitsOf(text, 0, run.count - 1);
  if (digits.length === 13) {
    if (!digits.startsWith('978') && !digits.startsWith('979')) return false;
    let sum = 0;
    for (let i = 0; i < 13; i++) sum += (digits.charCodeAt(i) - 48) * (i % 2 === 0 ? 1 : 3);
    return sum % 10 === 0;
  }
  if (digits.length === 10) {
    let sum = 0;
    for (let i = 0; i < 10; i++) sum += (digits.charCodeAt(i) - 48) * (10 - i);
    return sum % 11 === 0;
  }
  return false;
}
