// Protects a JSON text in place: one strict pass finds each value's span, protected values are
// replaced by their new JSON text and removed members are cut out with their comma; every other
// byte (big integers, key order, spacing, escapes, duplicate keys) is copied as it was. Nothing is
// parsed into objects, so `__proto__` is just a key and the document is never re-serialised.

import { isSafeName, WITHHELD } from '../../core/safe-name.ts';
import type { Scalar } from '../../core/types.ts';
import { innerAction, type FieldAction, type FieldResolver } from '../codec.ts';
import { encodeScalar, JsonText, ScalarKind, type JsonTextLimits } from './text.ts';

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
  /** Keys and indexes from the root to the container being read. */
  private readonly trail: (string | number)[] = [];
  private readonly chunks: string[] = [];
  private copiedUpTo = 0;

  constructor(
    private readonly reader: JsonText,
    private readonly resolver: FieldResolver,
  ) {
    this.text = reader.text;
    this.usesPaths = resolver.usesPaths;
  }

  run(inherited: FieldAction | undefined): string {
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
      if (loose !== undefined) this.applyScalar(loose, p, end, reader.scalarValue(p, end), undefined);
    }
    reader.end(end);
    if (this.chunks.length === 0) return this.text;
    this.chunks.push(this.text.slice(this.copiedUpTo));
    return this.chunks.join('');
  }

  private edit(start: number, end: number, replacement: string): void {
    this.chunks.push(this.text.slice(this.copiedUpTo, start), replacement);
    this.copiedUpTo = end;
  }

  private pathTo(last: string): string {
    let p = '$';
    for (const step of this.trail) p += typeof step === 'number' ? `[${step}]` : pathStep(step);
    return p + pathStep(last);
  }

  private locationTo(last: string | number | undefined): string {
    let p = '$';
    for (const step of this.trail) p += typeof step === 'number' ? `[${step}]` : locationStep(step);
    if (last === undefined) return p;
    return p + (typeof last === 'number' ? `[${last}]` : locationStep(last));
  }

  private applyScalar(action: FieldAction, start: number, end: number, value: Scalar, last: string | number | undefined): void {
    // A number handed over as its text (a big integer) is written back as a number if it still is one.
    const numberAsText = typeof value === 'string' && this.text.charCodeAt(start) !== C.Quote;
    const out = action.apply(value, () => this.locationTo(last));
    if (Object.is(out, value)) return;
    this.edit(start, end, encodeScalar(out, numberAsText));
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
        if (action !== undefined && action.removes(CONTAINER)) {
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
          if (action.removes(value)) removed = true;
          else {
            if (runStart >= 0) runStart = this.cutRun(runStart, keyStart);
            this.applyScalar(action, valueStart, valueEnd, value, key);
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
        if (action !== undefined) this.applyScalar(action, q, end, reader.scalarValue(q, end), i);
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
  return new TextProtector(new JsonText(text, limits, what), resolver).run(inherited);
}
