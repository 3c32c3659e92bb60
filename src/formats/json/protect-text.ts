// Protects a JSON text in place: one strict pass finds each value's span, protected values are
// replaced by their new JSON text and removed members are cut out with their comma; every other
// byte (big integers, key order, spacing, escapes, duplicate keys) is copied as it was. Nothing is
// parsed into objects, so `__proto__` is just a key and the document is never re-serialised.

import { DpgError } from '../../core/errors.ts';
import { isSafeName, WITHHELD } from '../../core/safe-name.ts';
import type { Scalar } from '../../core/types.ts';
import { innerAction, type FieldAction, type FieldResolver } from '../codec.ts';
import { checkJsonText, encodeScalar, JsonText, type JsonTextLimits } from './text.ts';

const enum C {
  Quote = 34,
  LBracket = 91,
  RBracket = 93,
  LBrace = 123,
  RBrace = 125,
}

/** What `removes` is asked about an object or array value: never empty, so Restrict removes it. */
const CONTAINER: unknown = Object.freeze({ container: true });

/** Same path syntax as docs/manifests.md: `.key` for identifiers, `["key"]` otherwise. */
const PATH_IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function pathStep(key: string): string {
  return PATH_IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** A location for failure reports: keys that are not plain names are withheld (`$.a[?]`). */
function locationStep(key: string): string {
  return isSafeName(key) ? `.${key}` : `[${WITHHELD}]`;
}

class TextProtector {
  private readonly text: string;
  private readonly usesPaths: boolean;
  /** Keys and indexes from the root to the container being read (for an embedded document, from the outer root). */
  private readonly trail: (string | number)[];
  /**
   * Replacements in document order, flat (no object per edit: this is the hot path): edit k replaces
   * [editSpans[2k], editSpans[2k + 1]) of the text by editTexts[k].
   */
  readonly editSpans: number[] = [];
  readonly editTexts: string[] = [];
  /**
   * Strings waiting for the content-detection action, protected together (FieldAction.applyBatch:
   * FF1 then runs once per batch, not once per value). Anything else that could record a failure
   * or an edit first protects what is waiting, so edits stay in document order and failures are
   * recorded in the order a one-by-one walk records them.
   */
  private pendingAction: FieldAction | undefined;
  private pendingValues: string[] = [];
  /** [start, end) of each waiting string's token, two numbers a value. */
  private pendingSpans: number[] = [];
  /** Where each waiting string sits: the trail when it was read, and its own key or index. */
  private pendingTrails: (readonly (string | number)[])[] = [];
  private pendingLast: (string | number | undefined)[] = [];
  /** The member being read, for `memberLocation` (one function for all members, no closure each). */
  private memberKey = '';
  private readonly memberLocation = (): string => this.locationTo(this.memberKey);
  /** The scalar being protected, for `scalarLocation` (called, if at all, before apply returns). */
  private scalarLast: string | number | undefined;
  private readonly scalarLocation = (): string => this.locationTo(this.scalarLast);

  constructor(
    private readonly reader: JsonText,
    private readonly resolver: FieldResolver,
    trail: readonly (string | number)[] = [],
  ) {
    this.text = reader.text;
    this.usesPaths = resolver.usesPaths;
    this.trail = trail.slice();
  }

  /** Reads and protects the document; the edits are in `editSpans` and `editTexts`. */
  protect(inherited: FieldAction | undefined): void {
    const reader = this.reader;
    const p = reader.start();
    const c = this.text.charCodeAt(p);
    // Values under no key at all (a scalar document, array elements outside objects) get the
    // content-detection action, if the plan has one.
    const loose = inherited ?? this.resolver.contentAction?.();
    let end: number;
    if (c === C.LBrace) end = this.object(p, 1, inherited);
    else if (c === C.LBracket) end = this.array(p, 1, inherited, loose);
    else {
      end = reader.scalarEnd(p);
      if (loose !== undefined) this.applyScalar(loose, p, end, reader.scalarValue(p, end), undefined, 0);
    }
    reader.end(end);
    this.flush();
  }

  /** Protects the waiting strings (see pendingAction) and records their edits. */
  private flush(): void {
    const action = this.pendingAction;
    if (action === undefined) return;
    this.pendingAction = undefined;
    // The waiting lists are handed over, not copied: fresh ones take what comes next.
    const values = this.pendingValues;
    const spans = this.pendingSpans;
    const trails = this.pendingTrails;
    const lasts = this.pendingLast;
    this.pendingValues = [];
    this.pendingSpans = [];
    this.pendingTrails = [];
    this.pendingLast = [];
    const out = action.applyBatch(values, (k) => locationOf(trails[k], lasts[k]));
    for (let k = 0; k < values.length; k++) {
      const after = out[k];
      if (Object.is(after, values[k])) continue;
      const start = spans[2 * k];
      const end = spans[2 * k + 1];
      this.edit(start, end, typeof after === 'string' ? rewrittenString(this.text, start, end, values[k], after) : encodeScalar(after, false));
    }
  }

  /** Protects the waiting strings unless `action` is the one they wait for (see pendingAction). */
  private flushFor(action: FieldAction): void {
    if (this.pendingAction !== undefined && action !== this.pendingAction) this.flush();
  }

  /** The protected text: the original with the edits applied (the same string when there are none). */
  output(): string {
    const texts = this.editTexts;
    if (texts.length === 0) return this.text;
    const spans = this.editSpans;
    const parts: string[] = [];
    let at = 0;
    for (let k = 0; k < texts.length; k++) {
      parts.push(this.text.slice(at, spans[2 * k]), texts[k]);
      at = spans[2 * k + 1];
    }
    parts.push(this.text.slice(at));
    return parts.join('');
  }

  private edit(start: number, end: number, replacement: string): void {
    if (this.pendingAction !== undefined) this.flush();
    this.editSpans.push(start, end);
    this.editTexts.push(replacement);
  }

  private pathTo(last: string): string {
    let p = '$';
    for (const step of this.trail) p += typeof step === 'number' ? `[${step}]` : pathStep(step);
    return p + pathStep(last);
  }

  private locationTo(last: string | number | undefined): string {
    return locationOf(this.trail, last);
  }

  private applyScalar(action: FieldAction, start: number, end: number, value: Scalar, last: string | number | undefined, depth: number): void {
    // A number handed over as its text (a big integer) is written back as a number if it still is one.
    const numberAsText = typeof value === 'string' && this.text.charCodeAt(start) !== C.Quote;
    if (action.byContent === true && typeof value === 'string' && !numberAsText) {
      if (!looksLikeDocument(value)) {
        // Free text for content detection: it waits to be protected with the strings after it.
        this.flushFor(action);
        this.pendingAction = action;
        this.pendingValues.push(value);
        this.pendingSpans.push(start, end);
        this.pendingTrails.push(this.trail.slice());
        this.pendingLast.push(last);
        if (this.pendingValues.length >= PENDING_BATCH) this.flush();
        return;
      }
      this.flush();
      if (this.embedded(start, value, last, depth)) return;
    }
    this.flush();
    this.scalarLast = last;
    const out = action.apply(value, this.scalarLocation);
    if (Object.is(out, value)) return;
    const stringToString = typeof value === 'string' && !numberAsText && typeof out === 'string';
    this.edit(start, end, stringToString ? rewrittenString(this.text, start, end, value, out) : encodeScalar(out, numberAsText));
  }

  /**
   * An unclaimed string that is itself a JSON object or array (`"{\"name\":\"Jane\"}"`, a
   * document carried as a string) is protected as a document with the same rules, below the
   * string's own path; its edits are written into the string, escaped, every other byte kept.
   * False when the string is not such a document: it is then scanned as text.
   */
  private embedded(start: number, value: string, last: string | number | undefined, depth: number): boolean {
    if (!looksLikeDocument(value)) return false; // nearly every string: nothing built before this test
    const inner = embeddedProtector(value, this.resolver, this.reader.limits.maxDepth - depth, last === undefined ? this.trail : [...this.trail, last]);
    if (inner === undefined) return false;
    // Inner offsets count decoded characters; the string token has escapes (`\"` is one character).
    const toRaw = rawOffsets(this.text, start);
    for (let k = 0; k < inner.editTexts.length; k++) {
      const from = toRaw(inner.editSpans[2 * k]);
      this.edit(from, toRaw(inner.editSpans[2 * k + 1]), JSON.stringify(inner.editTexts[k]).slice(1, -1));
    }
    return true;
  }

  /** `loose`: the action for scalars of arrays reached without passing a key (see run). */
  private container(p: number, depth: number, action: FieldAction | undefined, loose?: FieldAction): number {
    return this.text.charCodeAt(p) === C.LBrace ? this.object(p, depth, action) : this.array(p, depth, action, loose);
  }

  private object(p: number, depth: number, inherited: FieldAction | undefined): number {
    const reader = this.reader;
    const text = this.text;
    if (depth > reader.limits.maxDepth) reader.tooDeep(p);
    let q = reader.ws(p + 1);
    if (text.charCodeAt(q) === C.RBrace) return q + 1;
    // Removed members are cut out with one comma: a run of them goes up to the next kept member's
    // name, or, at the end of the object, from the end of the last kept member.
    let runStart = -1;
    let runEnd = -1;
    let lastKeptEnd = -1;
    for (;;) {
      const keyStart = q;
      const keyEnd = reader.memberName(q);
      const key = reader.stringValue(keyStart, keyEnd, reader.hadEscape);
      const valueStart = reader.memberValue(keyEnd);
      const action = innerAction(this.resolver.resolve(key, this.usesPaths ? this.pathTo(key) : undefined), inherited);
      const c = text.charCodeAt(valueStart);
      const isContainer = c === C.LBrace || c === C.LBracket;
      let valueEnd: number;
      let removed = false;
      if (isContainer) {
        this.memberKey = key;
        if (action !== undefined) this.flushFor(action);
        if (action !== undefined && action.removes(CONTAINER, this.memberLocation)) {
          removed = true;
          valueEnd = reader.skipValue(valueStart, depth);
        } else {
          if (runStart >= 0) runStart = this.cutRun(runStart, keyStart);
          this.trail.push(key);
          valueEnd = this.container(valueStart, depth + 1, action);
          this.trail.pop();
        }
      } else {
        valueEnd = reader.scalarEnd(valueStart);
        if (action !== undefined) {
          const value = reader.scalarValue(valueStart, valueEnd);
          this.memberKey = key;
          this.flushFor(action);
          if (action.removes(value, this.memberLocation)) removed = true;
          else {
            if (runStart >= 0) runStart = this.cutRun(runStart, keyStart);
            this.applyScalar(action, valueStart, valueEnd, value, key, depth);
          }
        } else if (runStart >= 0) runStart = this.cutRun(runStart, keyStart);
      }
      if (removed) {
        if (runStart < 0) runStart = keyStart;
        runEnd = valueEnd;
      } else lastKeptEnd = valueEnd;
      q = reader.separator(valueEnd, C.RBrace);
      if (q < 0) break;
    }
    if (runStart >= 0) {
      if (lastKeptEnd >= 0) this.edit(lastKeptEnd, runEnd, '');
      else this.edit(runStart, runEnd, '');
    }
    return ~q;
  }

  /** Cuts a run of removed members that a kept member (starting at `next`) follows; returns -1. */
  private cutRun(runStart: number, next: number): number {
    this.edit(runStart, next, '');
    return -1;
  }

  private array(p: number, depth: number, inherited: FieldAction | undefined, loose?: FieldAction): number {
    const reader = this.reader;
    const text = this.text;
    if (depth > reader.limits.maxDepth) reader.tooDeep(p);
    let q = reader.ws(p + 1);
    if (text.charCodeAt(q) === C.RBracket) return q + 1;
    const action = inherited ?? loose;
    for (let i = 0; ; i++) {
      const c = text.charCodeAt(q);
      let end: number;
      if (c === C.LBrace || c === C.LBracket) {
        this.trail.push(i);
        end = this.container(q, depth + 1, inherited, loose);
        this.trail.pop();
      } else {
        end = reader.scalarEnd(q);
        if (action !== undefined) this.applyScalar(action, q, end, reader.scalarValue(q, end), i, depth);
      }
      q = reader.separator(end, C.RBracket);
      if (q < 0) return ~q;
    }
  }
}

/**
 * Protects a JSON text and returns the new text (the same string when nothing changed). With
 * `inherited`, every scalar gets that action unless a key has its own rule (a gRPC JSON cell under
 * a matched label). Throws MALFORMED_DATA_SET with a line and column, before any output exists.
 */
export function protectJsonText(
  text: string,
  resolver: FieldResolver,
  limits: JsonTextLimits,
  inherited?: FieldAction,
  what = 'JSON',
): string {
  const protector = new TextProtector(new JsonText(text, limits, what), resolver);
  protector.protect(inherited);
  return protector.output();
}

/** Strings for content detection protected together at most (a bound on what waits in memory). */
const PENDING_BATCH = 4096;

/** A failure location: keys that are not plain names are withheld (`$.a[?]`). */
function locationOf(trail: readonly (string | number)[], last: string | number | undefined): string {
  let p = '$';
  for (const step of trail) p += typeof step === 'number' ? `[${step}]` : locationStep(step);
  if (last === undefined) return p;
  return p + (typeof last === 'number' ? `[${last}]` : locationStep(last));
}

/** `{…}` or `[…]` around optional white space: worth a strict parse as a document. */
function looksLikeDocument(value: string): boolean {
  let i = 0;
  let j = value.length - 1;
  while (i < j && value.charCodeAt(i) <= 32) i++;
  const first = value.charCodeAt(i);
  if (first !== C.LBrace && first !== C.LBracket) return false;
  while (j > i && value.charCodeAt(j) <= 32) j--;
  return value.charCodeAt(j) === (first === C.LBrace ? C.RBrace : C.RBracket);
}

/**
 * The protector of a string that is a JSON object or array within `maxDepth` levels, protected
 * below `trail`; undefined when it is not one (nothing has been protected then).
 */
function embeddedProtector(value: string, resolver: FieldResolver, maxDepth: number, trail: readonly (string | number)[]): TextProtector | undefined {
  if (maxDepth < 1 || !looksLikeDocument(value)) return undefined;
  const limits = { maxDepth };
  // Checked whole first: a string that only looks like a document must leave no trace (counts,
  // failures) before it turns out to be text.
  try {
    checkJsonText(value, limits);
  } catch (err) {
    if (err instanceof DpgError) return undefined;
    throw err;
  }
  const inner = new TextProtector(new JsonText(value, limits), resolver, trail);
  inner.protect(undefined);
  return inner;
}

/**
 * For the parsed-value walker (codec.ts): a string that is itself a JSON object or array,
 * protected as a document below `trail` (see TextProtector.embedded); undefined when it is not one.
 */
export function protectEmbeddedJson(value: string, resolver: FieldResolver, maxDepth: number, trail: () => readonly (string | number)[]): string | undefined {
  if (!looksLikeDocument(value)) return undefined;
  return embeddedProtector(value, resolver, maxDepth, trail())?.output();
}

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/**
 * The string token `text[start, end)`, whose value was `before`, rewritten to hold `after`: the
 * characters both share at the start and at the end keep the client's writing (its escapes, a raw
 * lone surrogate), and only what changed between them is written, escaped as JSON.stringify does.
 * A rule that protects a card inside a note then changes the card's bytes only, and Reconstruct
 * gives back the exact bytes (re-escaping the whole string wrote `\ud800` for a raw lone surrogate:
 * the same value to a parser, other bytes). A surrogate pair is never split between kept and
 * written parts.
 */
export function rewrittenString(text: string, start: number, end: number, before: string, after: string): string {
  const shorter = Math.min(before.length, after.length);
  let prefix = 0;
  while (prefix < shorter && before.charCodeAt(prefix) === after.charCodeAt(prefix)) prefix++;
  if (prefix > 0 && isHigh(before.charCodeAt(prefix - 1)) && (isLow(before.charCodeAt(prefix)) || isLow(after.charCodeAt(prefix)))) prefix--;
  let suffix = 0;
  while (suffix < shorter - prefix && before.charCodeAt(before.length - 1 - suffix) === after.charCodeAt(after.length - 1 - suffix)) suffix++;
  if (suffix > 0 && isLow(before.charCodeAt(before.length - suffix)) && (isHigh(before.charCodeAt(before.length - suffix - 1)) || isHigh(after.charCodeAt(after.length - suffix - 1)))) suffix--;
  if (prefix === 0 && suffix === 0) return JSON.stringify(after);
  const toRaw = rawOffsets(text, start);
  const keptHead = toRaw(prefix);
  const keptTail = toRaw(before.length - suffix);
  return text.slice(start, keptHead) + JSON.stringify(after.slice(prefix, after.length - suffix)).slice(1, -1) + text.slice(keptTail, end);
}

/**
 * Offsets in the string token starting at `start` of its decoded characters, asked in increasing
 * order: an escape is 2 characters, `\uXXXX` 6, any other 1.
 */
function rawOffsets(text: string, start: number): (decodedIndex: number) => number {
  let raw = start + 1;
  let decoded = 0;
  return (target) => {
    for (; decoded < target; decoded++) raw += text.charCodeAt(raw) !== 92 ? 1 : text.charCodeAt(raw + 1) === 117 ? 6 : 2;
    return raw;
  };
}
