// The content scanner: one pass over a text finds every card, email, phone, IBAN, SSN and IP address
// in it. Each character is looked at once through a class table; only a digit, `@`, `:` or an
// upper-case letter followed by two digits starts the (cheap) check of one kind, so text without
// such characters costs a table lookup per character. Compiled once per manifest and kind set.

import { CLASS, HEX, boundaryBefore } from './chars.ts';
import { emailAround } from './email.ts';
import { ibanEndAt } from './iban.ts';
import { ipv6Around } from './ip.ts';
import { scanDigitRun, type DigitKinds } from './digit-runs.ts';
import { PhoneRegions } from './phone-regions.ts';
import { decodedView } from './decode.ts';
import { isSsnDigits } from './ssn.ts';
import type { DetectKind, DetectedSpan } from './kinds.ts';

const AT = 64;
const COLON = 58;

const NOTHING: readonly DetectedSpan[] = Object.freeze([]);

export interface ScannerOptions {
  /**
   * Regions (ISO 3166 codes) whose national phone writings are detected, validated against
   * libphonenumber's numbering plans (`DE`: `030 1234567`). Absent or empty: NANP numbers and the
   * region-free rules of phone.ts only.
   */
  readonly phoneRegions?: readonly string[];
  /** Whole values that are base64 text are decoded and protected inside (manifest `detect.base64`). */
  readonly base64?: boolean;
}

export class ContentScanner {
  readonly kinds: ReadonlySet<DetectKind>;
  /** Read whole values that are base64 text (base64.ts); the scanner itself only reads text. */
  readonly base64: boolean;
  private readonly digits: DigitKinds;
  private readonly anyDigits: boolean;
  private readonly email: boolean;
  private readonly iban: boolean;
  private readonly ipv6: boolean;
  /** Finds the characters that can start a value of the wanted kinds (a digit, `@`, `:`, `AB12`). */
  private readonly trigger: RegExp;
  /** Spans of the digit run being read (emptied after each run that found any). */
  private readonly digitSpans: DetectedSpan[] = [];

  constructor(kinds: Iterable<DetectKind>, options: ScannerOptions = {}) {
    this.kinds = new Set(kinds);
    this.base64 = options.base64 === true;
    const has = (k: DetectKind) => this.kinds.has(k);
    const regions = options.phoneRegions !== undefined && options.phoneRegions.length > 0 ? new PhoneRegions(options.phoneRegions) : undefined;
    this.digits = { card: has('card'), ssn: has('ssn'), phone: has('phone'), ipv4: has('ipAddress'), regions };
    this.anyDigits = this.digits.card || this.digits.ssn || this.digits.phone || this.digits.ipv4;
    this.email = has('email');
    this.iban = has('iban');
    this.ipv6 = has('ipAddress');
    const chars = (this.anyDigits ? '0-9' : '') + (this.email ? '@' : '') + (this.ipv6 ? ':' : '');
    const alternatives = [chars ? `[${chars}]` : '', this.iban ? '[A-Z](?=[A-Z][0-9]{2})' : ''].filter((a) => a !== '');
    this.trigger = new RegExp(alternatives.length > 0 ? alternatives.join('|') : '(?!)', 'g');
  }

  /**
   * Every detected value in `text`, in order, never overlapping. A text holding an encoding
   * (fullwidth digits, zero-width characters, `%40`, `\u0040`, `&#64;`) is read decoded, and each
   * span covers the original characters its value was written with (decode.ts).
   */
  scan(text: string): readonly DetectedSpan[] {
    return this.scanInto(text, undefined);
  }

  /**
   * What scan finds, and the readings it left out because a later one overlapped them (an SSN in
   * `001-01-0001::1`, read as the IPv6 address `0001::1`): a protection that may leave nothing in
   * clear covers those too (docs/detection.md, "No value left in clear").
   */
  scanWithOverlapped(text: string): { readonly spans: readonly DetectedSpan[]; readonly overlapped: readonly DetectedSpan[] } {
    const overlapped: DetectedSpan[] = [];
    const spans = this.scanInto(text, overlapped);
    return { spans, overlapped };
  }

  private scanInto(text: string, overlapped: DetectedSpan[] | undefined): readonly DetectedSpan[] {
    const view = decodedView(text);
    if (view === undefined) return this.scanText(text, overlapped);
    const dropped: DetectedSpan[] | undefined = overlapped === undefined ? undefined : [];
    const found = this.scanText(view.text, dropped);
    const back = (s: DetectedSpan): DetectedSpan => ({ start: view.from[s.start], end: view.to[s.end - 1], kind: s.kind });
    if (dropped !== undefined) for (const s of dropped) overlapped!.push(back(s));
    if (found.length === 0) return NOTHING;
    return found.map(back);
  }

  private scanText(text: string, overlapped?: DetectedSpan[]): readonly DetectedSpan[] {
    const n = text.length;
    if (n < 4) return NOTHING;
    // The regex engine skips to the next character that can start a value far faster than a
    // JavaScript loop can; each hit is then read by hand.
    const trigger = this.trigger;
    trigger.lastIndex = 0;
    let out: DetectedSpan[] | undefined;
    /** The end of the last stretch of address characters that held no IPv6 address: its colons start none. */
    let ipv6Checked = -1;
    // test() rather than exec(): no match object per hit. Every alternative matches one character.
    while (trigger.test(text)) {
      const i = trigger.lastIndex - 1;
      const c = text.charCodeAt(i);
      let next = i + 1;
      if (c >= 48 && c <= 57) {
        // Most digit runs hold nothing: collect into a reused array, allocate only on a find.
        const found = this.digitSpans;
        next = scanDigitRun(text, i, this.digits, found);
        if (found.length > 0) {
          // Sized to what was found: most texts hold one value.
          if (out === undefined) out = found.slice();
          else for (let k = 0; k < found.length; k++) out.push(found[k]);
          found.length = 0;
        }
      } else if (c === AT) {
        const found = emailAround(text, i);
        if (found !== undefined) {
          out = replaceOverlapped(out, found[0], found[1], 'email', overlapped);
          next = found[1];
        }
      } else if (c === COLON) {
        if (i >= ipv6Checked && isHexOrColon(text, i - 1) && isHexOrColon(text, i + 1)) {
          const [start, end, isAddress] = ipv6Around(text, i);
          if (isAddress) {
            out = replaceOverlapped(out, start, end, 'ipAddress', overlapped);
            next = end;
          } else {
            // Not an address, but what follows the colon may be another value (`Card:4111…`,
            // `Node:10.0.0.1`): scanning goes on right after it, and the stretch's other colons are
            // not checked again (each character is still read a bounded number of times).
            ipv6Checked = end;
          }
        }
      } else if (boundaryBefore(text, i)) {
        const end = ibanEndAt(text, i);
        if (end >= 0) {
          const span: DetectedSpan = { start: i, end, kind: 'iban' };
          if (out === undefined) out = [span];
          else out.push(span);
          next = end;
        }
      }
      trigger.lastIndex = next;
    }
    return out === undefined || out.length === 0 ? NOTHING : out;
  }

  /**
   * The value, as a whole, is a value of `kind` — or, for an SSN, nine bare digits that are one:
   * a kind detected there from its context word (`SSN 123456789`), which the value alone lacks.
   */
  isWhole(text: string, kind: DetectKind): boolean {
    if (this.wholeKind(text) === kind) return true;
    return kind === 'ssn' && text.length === 9 && /^[0-9]{9}$/.test(text) && isSsnDigits(text);
  }

  /** The kind of a value that is, as a whole, one detected value; undefined otherwise. */
  wholeKind(text: string): DetectKind | undefined {
    const spans = this.scan(text);
    if (spans.length !== 1) return undefined;
    const span = spans[0];
    return span.start === 0 && span.end === text.length ? span.kind : undefined;
  }
}

function isHexOrColon(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  return c === COLON || (c < 128 && (CLASS[c] & HEX) !== 0);
}

/** Adds a span found around earlier ones (an email around digits, an IPv6 address around a number); the ones it replaces go to `overlapped`. */
function replaceOverlapped(out: DetectedSpan[] | undefined, start: number, end: number, kind: DetectKind, overlapped: DetectedSpan[] | undefined): DetectedSpan[] {
  const span: DetectedSpan = { start, end, kind };
  if (out === undefined) return [span];
  while (out.length > 0 && out[out.length - 1].end > start) {
    const dropped = out.pop()!;
    overlapped?.push(dropped);
  }
  out.push(span);
  return out;
}
