// The content scanner: one pass over a text finds every card, email, phone, IBAN, SSN and IP address
// in it. Each character is looked at once through a class table; only a digit, `@`, `:` or an
// upper-case letter followed by two digits starts the (cheap) check of one kind, so text without
// such characters costs a table lookup per character. Compiled once per manifest and kind set.

import { CLASS, DIGIT, HEX, UPPER, boundaryBefore } from './chars.ts';
import { emailAround } from './email.ts';
import { ibanEndAt } from './iban.ts';
import { ipv6Around } from './ip.ts';
import { scanDigitRun, type DigitKinds } from './digit-runs.ts';
import type { DetectKind, DetectedSpan } from './kinds.ts';

const AT = 64;
const COLON = 58;

const NOTHING: readonly DetectedSpan[] = Object.freeze([]);

export class ContentScanner {
  readonly kinds: ReadonlySet<DetectKind>;
  private readonly digits: DigitKinds;
  private readonly anyDigits: boolean;
  private readonly email: boolean;
  private readonly iban: boolean;
  private readonly ipv6: boolean;

  constructor(kinds: Iterable<DetectKind>) {
    this.kinds = new Set(kinds);
    const has = (k: DetectKind) => this.kinds.has(k);
    this.digits = { card: has('card'), ssn: has('ssn'), phone: has('phone'), ipv4: has('ipAddress') };
    this.anyDigits = this.digits.card || this.digits.ssn || this.digits.phone || this.digits.ipv4;
    this.email = has('email');
    this.iban = has('iban');
    this.ipv6 = has('ipAddress');
  }

  /** Every detected value in `text`, in order, never overlapping. */
  scan(text: string): readonly DetectedSpan[] {
    const n = text.length;
    if (n < 4) return NOTHING;
    let out: DetectedSpan[] | undefined;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c >= 128) continue;
      const cls = CLASS[c];
      if (cls & DIGIT) {
        if (!this.anyDigits) continue;
        out ??= [];
        // A run starts at a digit whose previous character is not one.
        i = scanDigitRun(text, i, this.digits, out) - 1;
        continue;
      }
      if (c === AT) {
        if (!this.email) continue;
        const found = emailAround(text, i);
        if (found === undefined) continue;
        out = replaceOverlapped(out, found[0], found[1], 'email');
        i = found[1] - 1;
        continue;
      }
      if (c === COLON) {
        if (!this.ipv6 || !(isHexOrColon(text, i - 1) && isHexOrColon(text, i + 1))) continue;
        const found = ipv6Around(text, i);
        if (found === undefined) continue;
        out = replaceOverlapped(out, found[0], found[1], 'ipAddress');
        i = found[1] - 1;
        continue;
      }
      if (cls & UPPER && this.iban && i + 3 < n && isClass(text, i + 1, UPPER) && isClass(text, i + 2, DIGIT) && isClass(text, i + 3, DIGIT)) {
        if (!boundaryBefore(text, i)) continue;
        const end = ibanEndAt(text, i);
        if (end < 0) continue;
        (out ??= []).push({ start: i, end, kind: 'iban' });
        i = end - 1;
      }
    }
    return out === undefined || out.length === 0 ? NOTHING : out;
  }

  /** The kind of a value that is, as a whole, one detected value; undefined otherwise. */
  wholeKind(text: string): DetectKind | undefined {
    const spans = this.scan(text);
    if (spans.length !== 1) return undefined;
    const span = spans[0];
    return span.start === 0 && span.end === text.length ? span.kind : undefined;
  }
}

function isClass(text: string, i: number, bits: number): boolean {
  const c = text.charCodeAt(i);
  return c < 128 && (CLASS[c] & bits) !== 0;
}

function isHexOrColon(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  return c === COLON || (c < 128 && (CLASS[c] & HEX) !== 0);
}

/** Adds a span found around earlier ones (an email around digits, an IPv6 address around a number). */
function replaceOverlapped(out: DetectedSpan[] | undefined, start: number, end: number, kind: DetectKind): DetectedSpan[] {
  const list = out ?? [];
  while (list.length > 0 && list[list.length - 1].end > start) list.pop();
  list.push({ start, end, kind });
  return list;
}
