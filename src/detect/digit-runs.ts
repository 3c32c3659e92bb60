// Numbers written as runs of digit groups (`4111 1111 1111 1111`, `(415) 555-0132`, `123-45-6789`,
// `192.0.2.10`, `+44 20 7946 0958`): read once into groups and separators, then the longest run of
// consecutive groups that one kind accepts is taken, in the order card, ssn, phone, ipAddress.
// Groups join over one space, `-`, `.`, or a bracket around a group; anything else ends the run.

import { CARD_MAX_DIGITS, CARD_MIN_DIGITS, isCardDigits, isCardGrouping } from './card.ts';
import { CLASS, DIGIT, WORD, classAt } from './chars.ts';
import type { DetectKind, DetectedSpan } from './kinds.ts';
import { E164_MAX_DIGITS, E164_MIN_DIGITS, hasCountryCode, isNanpDigits } from './phone.ts';
import { isSsnDigits } from './ssn.ts';

const SPACE = 1;
const DASH = 2;
const DOT = 3;
/** A separator with a bracket in it: `) `, `)-`, ` (`, `(`, `)`. */
const BRACKET = 4;

/** The longest digit count any kind takes (`00` + 15 international digits). */
const MAX_SPAN_DIGITS = 19;

/** Which digit-run kinds a scanner looks for. */
export interface DigitKinds {
  readonly card: boolean;
  readonly ssn: boolean;
  readonly phone: boolean;
  readonly ipv4: boolean;
}

/** Reused between calls: the groups of the run being read. */
class Run {
  /** Group k covers text[start[k], end[k]); sep[k] is the separator before group k (0 for k = 0). */
  readonly start: number[] = [];
  readonly end: number[] = [];
  readonly sep: number[] = [];
  /** Group k is written inside brackets. */
  readonly bracketed: boolean[] = [];
  /** The run starts with `+` (just before group 0). */
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
    this.bracketed[k] = bracketed;
  }
}

const run = new Run();

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

/**
 * Reads the run of digit groups starting at `i` (a digit whose previous character is not a digit),
 * adds the spans it holds to `out`, and returns where scanning goes on.
 */
export function scanDigitRun(text: string, i: number, kinds: DigitKinds, out: DetectedSpan[]): number {
  const n = text.length;
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
    openBracket = false;
    if (run.count >= 64) break;
    // The separator before the next group.
    const c0 = text.charCodeAt(next);
    const c1 = text.charCodeAt(next + 1);
    let nextStart = -1;
    if (bracketed) {
      if (isDigit(text, next)) ((sep = BRACKET), (nextStart = next));
      else if ((c0 === 32 || c0 === 45 || c0 === 0xa0) && isDigit(text, next + 1)) ((sep = BRACKET), (nextStart = next + 1));
    } else if (c0 === 32 || c0 === 0xa0 || c0 === 45 || c0 === 46) {
      if (isDigit(text, next + 1)) {
        sep = c0 === 45 ? DASH : c0 === 46 ? DOT : SPACE;
        nextStart = next + 1;
      } else if (c1 === 40 && (c0 === 32 || c0 === 45) && isDigit(text, next + 2)) {
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
  if (!run.plus && run.count < 4 && run.end[run.count - 1] - run.start[0] < 9) return resume;
  classifyRun(text, kinds, out);
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

/** Tries, from each group on, the kinds in order; takes the longest run of groups one accepts. */
function classifyRun(text: string, kinds: DigitKinds, out: DetectedSpan[]): void {
  const count = run.count;
  for (let a = 0; a < count; ) {
    // A value starting inside the run must follow a space or a bracket: after a dash or a dot it
    // is the tail of something else (`4341-0066 9014-9015`, `3.14159…`).
    if (a > 0 && (run.sep[a] === DOT || run.sep[a] === DASH)) {
      a++;
      continue;
    }
    let digits = '';
    const candidates: string[] = [];
    for (let b = a; b < count; b++) {
      digits += text.slice(run.start[b], run.end[b]);
      if (digits.length > MAX_SPAN_DIGITS) break;
      candidates.push(digits);
    }
    let found: { b: number; kind: DetectKind } | undefined;
    for (let k = 0; k < KIND_ORDER.length && found === undefined; k++) {
      const kind = KIND_ORDER[k];
      if (!wanted(kinds, kind)) continue;
      const [minDigits, maxDigits, groups] = SHAPE[kind];
      for (let b = a + candidates.length - 1; b >= a; b--) {
        const length = candidates[b - a].length;
        if (length < minDigits || length > maxDigits || (groups !== 0 && b - a + 1 !== groups)) continue;
        if (b + 1 < count && run.sep[b + 1] === DOT && kind !== 'ipAddress') continue; // ends before a dot: a decimal
        if (accepts(kind, text, a, b, candidates[b - a])) {
          found = { b, kind };
          break;
        }
      }
    }
    if (found === undefined) {
      a++;
      continue;
    }
    // Brackets belong to a value of several groups (`(415) 555-0132`), not to one group in brackets.
    const b = found.b;
    const start = a === 0 && run.plus ? run.textStart : run.bracketed[a] && b > a ? run.start[a] - 1 : run.start[a];
    const end = run.bracketed[b] && b > a ? run.end[b] + 1 : run.end[b];
    out.push({ start, end, kind: found.kind });
    a = found.b + 1;
  }
}

const KIND_ORDER: readonly DetectKind[] = ['card', 'ssn', 'phone', 'ipAddress'];

/** Per kind: fewest and most digits, and the number of groups (0: any), checked before the rules. */
const SHAPE: Readonly<Record<string, readonly [number, number, number]>> = {
  card: [CARD_MIN_DIGITS, CARD_MAX_DIGITS, 0],
  ssn: [9, 9, 3],
  phone: [E164_MIN_DIGITS, E164_MAX_DIGITS + 2, 0],
  ipAddress: [4, 12, 4],
};

function wanted(kinds: DigitKinds, kind: DetectKind): boolean {
  return kind === 'card' ? kinds.card : kind === 'ssn' ? kinds.ssn : kind === 'phone' ? kinds.phone : kinds.ipv4;
}

function accepts(kind: DetectKind, text: string, a: number, b: number, digits: string): boolean {
  switch (kind) {
    case 'card':
      return isCard(a, b, digits);
    case 'ssn':
      return isSsn(a, b, digits);
    case 'phone':
      return isPhone(a, b, digits);
    default:
      return isIpv4(text, a, b);
  }
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

function groupSizes(a: number, b: number): number[] {
  const sizes: number[] = [];
  for (let k = a; k <= b; k++) sizes.push(run.end[k] - run.start[k]);
  return sizes;
}

function isCard(a: number, b: number, digits: string): boolean {
  if (digits.length > CARD_MAX_DIGITS || (a === 0 && run.plus) || (b > a && hasBracket(a, b))) return false;
  const sep = commonSeparator(a, b);
  if (sep !== 0 && sep !== SPACE && sep !== DASH) return false;
  return isCardGrouping(groupSizes(a, b)) && isCardDigits(digits);
}

function isSsn(a: number, b: number, digits: string): boolean {
  if (b - a !== 2 || (a === 0 && run.plus) || hasBracket(a, b)) return false;
  const sep = commonSeparator(a, b);
  if (sep !== SPACE && sep !== DASH) return false;
  const sizes = groupSizes(a, b);
  return sizes[0] === 3 && sizes[1] === 2 && sizes[2] === 4 && isSsnDigits(digits);
}

function isPhone(a: number, b: number, digits: string): boolean {
  const plus = a === 0 && run.plus;
  if (plus || (digits.startsWith('00') && b > a)) {
    const national = plus ? digits : digits.slice(2);
    if (!plus && run.end[a] - run.start[a] < 2) return false;
    return national.length >= E164_MIN_DIGITS && national.length <= E164_MAX_DIGITS && hasCountryCode(national) && !mixesDots(a, b);
  }
  if (b === a) return false; // bare digits are never a phone
  const sizes = groupSizes(a, b);
  // NANP: [1] area exchange line.
  let k = a;
  let nanp = digits;
  if (sizes.length === 4 && sizes[0] === 1 && digits[0] === '1') {
    k = a + 1;
    nanp = digits.slice(1);
  }
  if (b - k === 2 && run.end[k] - run.start[k] === 3 && run.end[k + 1] - run.start[k + 1] === 3 && run.end[b] - run.start[b] === 4) {
    if (!isNanpDigits(nanp)) return false;
    const last = run.sep[b];
    if (last === BRACKET) return false;
    if (run.bracketed[k]) return !run.bracketed[k + 1] && !run.bracketed[b];
    return !hasBracket(k, b) && run.sep[k + 1] === last;
  }
  // National with a trunk 0: 10-11 digits in two or more groups of 2-8.
  if (digits[0] !== '0' || digits[1] === '0' || digits.length < 10 || digits.length > 11) return false;
  for (const size of sizes) if (size < 2 || size > 8) return false;
  for (let g = a + 1; g <= b; g++) if (run.sep[g] === DOT && run.sep[a + 1] !== DOT) return false;
  return !run.bracketed[b] || b === a;
}

/** `+1.415.555.0132` is common enough; dots are only refused mixed with other separators. */
function mixesDots(a: number, b: number): boolean {
  const s = commonSeparator(a, b);
  if (s === DOT) return false;
  for (let k = a + 1; k <= b; k++) if (run.sep[k] === DOT) return true;
  return false;
}

function isIpv4(text: string, a: number, b: number): boolean {
  if (b - a !== 3 || (a === 0 && run.plus) || hasBracket(a, b) || commonSeparator(a, b) !== DOT) return false;
  // The address is a whole dotted stretch: `1.2.3.4.5` is a version number.
  if (b + 1 < run.count && run.sep[b + 1] === DOT) return false;
  for (let k = a; k <= b; k++) {
    const size = run.end[k] - run.start[k];
    if (size > 3) return false;
    if (size > 1 && text.charCodeAt(run.start[k]) === 48) return false;
    if (Number(text.slice(run.start[k], run.end[k])) > 255) return false;
  }
  return true;
}
