// The action for fields no selector claims, when the manifest detects by content: it finds cards,
// emails, phones… in the value (the whole value, or spans inside free text) and applies each kind's
// rule to what it found, leaving every other character as it was.
//
// Reversal needs the protected spans to be found again. Mask/Anonymise/Restrict need not be
// reversed; Encrypt tokens are found by their `enc:v1:` prefix and opened with the kind whose key
// authenticates them. Pseudonymise is cycle-walked: the FPE permutation is applied again until the
// pseudonym is itself detected as the same kind (a permutation restricted to a subset by walking
// stays a permutation), so Reconstruct finds it, walks back the same way and restores the original.

import type { Scalar } from '../core/types.ts';
import type { FieldAction } from '../formats/codec.ts';
import type { ContentScanner } from '../detect/scanner.ts';
import type { DetectKind, DetectedSpan } from '../detect/kinds.ts';
import { findTokens } from '../detect/tokens.ts';
import { valueEncoding } from '../detect/decode.ts';
import { base64Text } from '../detect/base64.ts';
import { WITHHELD } from '../core/safe-name.ts';
import { ValueError, type BoundTechnique } from '../techniques/technique.ts';
import type { RunState } from './bind.ts';

/** How one detected kind is handled in this request. */
export interface BoundKind {
  readonly kind: DetectKind;
  readonly technique: BoundTechnique;
  /** Restrict: a whole value is removed, a span inside text becomes the restricted text. */
  readonly removes: boolean;
}

export type ContentMode = 'forward' | 'pseudonymise' | 'reconstruct' | 'decrypt';

/** A place in a text to reverse: a detected pseudonym, or an `enc:v1:` token (kind unknown). */
interface ReversePiece {
  readonly start: number;
  readonly end: number;
  readonly kind: DetectKind | 'token';
}

/** FPE walks this far at most; an FPE rule whose outputs are never the kind fails the value. */
const MAX_WALK = 1000;
const NOT_DETECTABLE = 'PSEUDONYM_NOT_DETECTABLE';
const TOKEN_PREFIX = 'enc:v1:';

export class ContentFieldAction implements FieldAction {
  readonly byContent = true;
  private readonly anyRemoves: boolean;

  constructor(
    private readonly run: RunState,
    private readonly scanner: ContentScanner,
    private readonly inText: boolean,
    private readonly kinds: ReadonlyMap<DetectKind, BoundKind>,
    private readonly mode: ContentMode,
  ) {
    this.anyRemoves = (mode === 'forward' || mode === 'pseudonymise') && [...kinds.values()].some((k) => k.removes);
  }

  removes(value: unknown): boolean {
    if (!this.anyRemoves || (typeof value !== 'string' && typeof value !== 'number')) return false;
    const kind = this.scanner.wholeKind(String(value));
    if (kind === undefined || !this.kinds.get(kind)!.removes) return false;
    this.run.summary.protected++;
    return true;
  }

  apply(value: Scalar, location: string | (() => string)): Scalar {
    const out = this.protect(value);
    if (!(out instanceof DetectedFailure)) return out;
    return this.fail(typeof location === 'string' ? () => location : location, out);
  }

  applyBatch(values: Scalar[], location: (index: number) => string): Scalar[] {
    const out = values.slice();
    for (let i = 0; i < out.length; i++) {
      const v = out[i];
      if (v === null || v === '' || typeof v === 'boolean') continue;
      // No location thunk per cell: one is made only for a cell that fails.
      const r = this.protect(v);
      out[i] = r instanceof DetectedFailure ? this.fail(() => location(i), r) : r;
    }
    return out;
  }

  applyPieces(pieces: readonly string[], location: string | (() => string)): string[] {
    try {
      return this.protectPieces(pieces);
    } catch (err) {
      if (!(err instanceof DetectedFailure)) throw err;
      // The whole value fails, as a single text would: the stand-in in the first piece, nothing after.
      const standIn = this.fail(typeof location === 'string' ? () => location : location, err);
      return pieces.map((_, i) => (i === 0 ? this.asText(standIn) : ''));
    }
  }

  /**
   * The action for a field whose own name holds a value of a detected kind (a JSON key that is an
   * e-mail address), or undefined. Forward jobs only: Reconstruct and Decrypt give back clear data
   * by design, and their input had its names checked on the way in.
   */
  personalName(name: string): FieldAction | undefined {
    if ((this.mode !== 'forward' && this.mode !== 'pseudonymise') || name.length < 4) return undefined;
    const spans = this.scanner.scan(name);
    if (spans.length === 0) return undefined;
    const kind = spans[0].kind;
    return new PersonalNameAction(this.run, name, kind, this.kinds.get(kind)!.removes);
  }

  /** The protected value, or the failure of one of its detected values (never thrown past here). */
  private protect(value: Scalar): Scalar | DetectedFailure {
    try {
      if (typeof value === 'number') return this.protectNumber(value);
      if (typeof value !== 'string' || value.length < 4) return value;
      // `detect.base64`: a value that is base64 text is protected inside and written back encoded.
      const inner = this.scanner.base64 ? base64Text(value) : undefined;
      if (inner !== undefined) {
        const out = this.protect(inner.text);
        return typeof out === 'string' ? inner.encode(out) : out;
      }
      return this.mode === 'decrypt' || this.mode === 'reconstruct' ? this.reverseText(value) : this.forwardText(value);
    } catch (err) {
      if (err instanceof DetectedFailure) return err;
      throw err;
    }
  }

  private fail(location: () => string, failure: DetectedFailure): Scalar {
    return this.run.fail(() => `${location()} (detected ${failure.kind})`, failure.reason, failure.hint);
  }

  /**
   * A JSON number can only be a whole card number (the other kinds need separators or letters). A
   * minus sign is no part of a card (`-4111111111111111` is the card with a sign in front): the
   * digits decide, and the kind's rule gets the number as written.
   */
  private protectNumber(value: number): Scalar {
    if (!Number.isSafeInteger(value) || Math.abs(value) < 1e11 || this.mode === 'decrypt') return value;
    const kind = this.kindOf(value);
    return kind === undefined ? value : this.one(kind, value);
  }

  /** The kind of a whole value; a number by its digits, sign dropped. */
  private kindOf(value: string | number): DetectKind | undefined {
    return this.scanner.wholeKind(typeof value === 'number' ? String(Math.abs(value)) : value);
  }

  private forwardText(text: string): Scalar {
    const spans = this.scanner.scan(text);
    if (spans.length === 0) return text;
    const first = spans[0];
    if (spans.length === 1 && first.start === 0 && first.end === text.length) return this.one(first.kind, text);
    if (!this.inText) return text;
    return this.splice(text, spans, (span) => this.asText(this.one(span.kind, text.slice(span.start, span.end))));
  }

  /**
   * Reconstruct and Decrypt: `enc:v1:` tokens (Encrypt, and the FPE short-value fallback) are opened
   * by the kind whose key authenticates them; Reconstruct also reverses the detected pseudonyms.
   */
  private reverseText(text: string): Scalar {
    const tokens: ReversePiece[] = text.includes(TOKEN_PREFIX) ? findTokens(text).map(([start, end]) => ({ start, end, kind: 'token' })) : [];
    const pieces = this.mode === 'reconstruct' ? merge(tokens, this.scanner.scan(text)) : tokens;
    if (pieces.length === 0) return text;
    const open = (piece: ReversePiece, value: string): Scalar => (piece.kind === 'token' ? this.openToken(value) : this.one(piece.kind, value));
    if (pieces.length === 1 && pieces[0].start === 0 && pieces[0].end === text.length) return open(pieces[0], text);
    if (!this.inText) return text;
    return this.splice(text, pieces, (piece) => this.asText(open(piece, text.slice(piece.start, piece.end))));
  }

  /** What a reader of each piece alone, or of the joined text, would find, protected in place. */
  private protectPieces(pieces: readonly string[]): string[] {
    const joined = pieces.join('');
    const reverse = this.mode === 'decrypt' || this.mode === 'reconstruct';
    const found: ReversePiece[] = [];
    let offset = 0;
    for (const piece of pieces) {
      for (const f of this.findIn(piece, reverse)) found.push({ start: f.start + offset, end: f.end + offset, kind: f.kind });
      offset += piece.length;
    }
    // Forward, a value a reader of the joined text sees is protected too. Reversing needs no joined
    // view: a protected value is always written inside one piece (the joined text could only run a
    // token on into the next piece and make it unreadable).
    if (!reverse) for (const f of this.findIn(joined, reverse)) found.push(f);
    if (found.length === 0) return pieces.slice();
    const regions = mergeOverlaps(found);
    const open = (piece: ReversePiece, value: string): Scalar =>
      piece.kind === 'token' ? this.openToken(value) : this.one(piece.kind, value);
    // Region by region: text before it is copied into the pieces it belongs to; the protected
    // value goes into the piece where it starts.
    const ends: number[] = [];
    offset = 0;
    for (const piece of pieces) ends.push((offset += piece.length));
    const out = pieces.map(() => '');
    const copy = (from: number, to: number): void => {
      for (let i = 0; i < pieces.length && from < to; i++) {
        if (from >= ends[i]) continue;
        const upTo = Math.min(to, ends[i]);
        out[i] += joined.slice(from, upTo);
        from = upTo;
      }
    };
    let at = 0;
    for (const region of regions) {
      copy(at, region.start);
      let home = 0;
      while (ends[home] <= region.start) home++;
      out[home] += this.asText(open(region, joined.slice(region.start, region.end)));
      at = region.end;
    }
    copy(at, joined.length);
    return out;
  }

  /** Detected values (forward), or tokens and pseudonyms (reverse) in one text; whole ones only without inText. */
  private findIn(text: string, reverse: boolean): readonly ReversePiece[] {
    if (text.length < 4) return [];
    let found: readonly ReversePiece[];
    if (!reverse) found = this.scanner.scan(text);
    else {
      const tokens: ReversePiece[] = text.includes(TOKEN_PREFIX) ? findTokens(text).map(([start, end]) => ({ start, end, kind: 'token' })) : [];
      found = this.mode === 'reconstruct' ? merge(tokens, this.scanner.scan(text)) : tokens;
    }
    if (this.inText || found.length === 0) return found;
    return found.length === 1 && found[0].start === 0 && found[0].end === text.length ? found : [];
  }

  /** Applies the kind's rule to one detected value (a whole value or a span). */
  private one(kind: DetectKind, value: Scalar): Scalar {
    const bound = this.kinds.get(kind)!;
    // A value written in an encoding (`４１１１…`, `jane%40example.com`): the rule sees it decoded,
    // its result is written back the same way (src/detect/decode.ts). Encrypt (the one forward rule
    // with an inverse) encrypts the value as written, so Decrypt gives back its exact spelling.
    const encoding = typeof value === 'string' && !(this.mode === 'forward' && bound.technique.inverse) ? valueEncoding(value) : undefined;
    if (encoding !== undefined) {
      const out = this.one(kind, encoding.plain);
      return typeof out === 'string' ? encoding.encode(out) : out;
    }
    const t = bound.technique;
    let out: Scalar;
    try {
      if (this.mode === 'reconstruct') {
        if (bound.removes || !t.inverse) return value;
        out = this.walk(kind, value, (v) => t.inverse!(v));
      } else if (this.mode === 'decrypt') return value;
      else if (bound.removes) out = this.run.standIn;
      else if (this.mode === 'pseudonymise') out = this.walk(kind, value, (v) => t.forward(v));
      else out = t.forward(value);
    } catch (err) {
      if (err instanceof ValueError) throw new DetectedFailure(kind, err.reason, err.hint);
      throw err;
    }
    this.run.summary.protected++;
    return out;
  }

  /** Applies `step` until the result is detected as `kind` again (or is a fallback token). */
  private walk(kind: DetectKind, value: Scalar, step: (v: Scalar) => Scalar): Scalar {
    if (typeof value === 'string' && value.startsWith(TOKEN_PREFIX)) return step(value);
    let out = step(value);
    for (let i = 0; i < MAX_WALK; i++) {
      if (typeof out === 'string' && out.startsWith(TOKEN_PREFIX)) return out;
      if (typeof out === 'number' && this.kindOf(out) === kind) return out;
      if (typeof out === 'string' && this.scanner.isWhole(out, kind)) return out;
      out = step(out);
    }
    throw new ValueError(NOT_DETECTABLE);
  }

  /** Opens a token with the first kind whose key authenticates it. */
  private openToken(token: string): Scalar {
    let reason = 'INVALID_CIPHERTEXT';
    let hint: string | undefined;
    for (const bound of this.kinds.values()) {
      const inverse = bound.technique.inverse;
      if (!inverse) continue;
      try {
        const out = inverse(token);
        this.run.summary.protected++;
        return out;
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
        reason = err.reason;
        hint = err.hint;
      }
    }
    throw new DetectedFailure('token', reason, hint);
  }

  /** A technique's result written into text: null (nullify) leaves the restricted text or nothing. */
  private asText(value: Scalar): string {
    return value === null ? this.run.standIn : typeof value === 'string' ? value : String(value);
  }

  private splice<P extends ReversePiece>(text: string, spans: readonly P[], replace: (span: P) => string): string {
    // Each span is protected on its own (the walk tests the pseudonym alone), so order is free.
    let out = '';
    let at = 0;
    for (const span of spans) {
      out += text.slice(at, span.start) + replace(span);
      at = span.end;
    }
    return out + text.slice(at);
  }
}

/** Reason of a field removed because its name holds a detected value (docs/detection.md). */
const PERSONAL_NAME = 'PERSONAL_DATA_IN_NAME';

/**
 * The action for a field whose own name is personal data: the field is always removed, name and
 * value (a name is never rewritten: two masked keys could collide, and readers look members up by
 * name). Where the kind's rule removes its values (Restrict) that is a protection; otherwise the
 * removal is recorded as a failure, so the request fails unless it runs in silent mode.
 */
class PersonalNameAction implements FieldAction {
  constructor(
    private readonly run: RunState,
    private readonly name: string,
    private readonly kind: DetectKind,
    private readonly removedByRule: boolean,
  ) {}

  removes(_value: unknown, location?: string | (() => string)): boolean {
    if (this.removedByRule) this.run.summary.protected++;
    else {
      const where = location === undefined ? WITHHELD : typeof location === 'string' ? location : location();
      // The codec's location may hold the name (a plain-looking IBAN key is a "safe" name): withhold it.
      this.run.fail(() => `${where.split(this.name).join(WITHHELD)} (detected ${this.kind})`, PERSONAL_NAME);
    }
    return true;
  }

  /** Codecs ask `removes` first, which always says yes; should one not, nothing of the value passes. */
  apply(_value: Scalar, location: string | (() => string)): Scalar {
    this.removes(undefined, location);
    return this.run.standIn;
  }

  applyBatch(values: Scalar[], location: (index: number) => string): Scalar[] {
    return values.map((_, i) => this.apply(null, () => location(i)));
  }
}

class DetectedFailure extends Error {
  constructor(
    readonly kind: string,
    readonly reason: string,
    readonly hint?: string,
  ) {
    super(reason);
  }
}

/**
 * Found values in joined-text offsets, possibly overlapping (a piece's phone inside the joined
 * text's e-mail address), merged into disjoint regions in order. A region takes the kind of its
 * longest value: the one a reader of the joined text sees whole.
 */
function mergeOverlaps(found: ReversePiece[]): ReversePiece[] {
  found.sort((x, y) => x.start - y.start || y.end - x.end);
  const out: { start: number; end: number; kind: ReversePiece['kind']; longest: number }[] = [];
  for (const f of found) {
    const last = out[out.length - 1];
    if (last !== undefined && f.start < last.end) {
      if (f.end > last.end) last.end = f.end;
      if (f.end - f.start > last.longest) ((last.longest = f.end - f.start), (last.kind = f.kind));
      continue;
    }
    out.push({ start: f.start, end: f.end, kind: f.kind, longest: f.end - f.start });
  }
  return out;
}

/** Tokens and detected spans in order; a detected span inside a token is part of the token. */
function merge(tokens: readonly ReversePiece[], spans: readonly DetectedSpan[]): ReversePiece[] {
  if (tokens.length === 0) return spans.slice();
  const out: ReversePiece[] = [];
  let t = 0;
  for (const span of spans) {
    while (t < tokens.length && tokens[t].end <= span.start) out.push(tokens[t++]);
    if (t < tokens.length && tokens[t].start < span.end) continue;
    out.push(span);
  }
  while (t < tokens.length) out.push(tokens[t++]);
  return out;
}
