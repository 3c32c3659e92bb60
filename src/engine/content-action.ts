// The action for fields no selector claims, when the manifest detects by content: it finds cards,
// emails, phones… in the value (the whole value, or spans inside free text) and applies each kind's
// rule to what it found, leaving every other character as it was.
//
// Reversal needs the protected spans to be found again. Mask/Anonymise/Restrict need not be
// reversed; Encrypt tokens are found by their `enc:v1:` prefix and opened with the kind whose key
// authenticates them. Pseudonymise uses each kind's scheme (techniques/pseudonymise/detected/),
// whose pseudonyms are valid values of the kind by construction. Inside text a pseudonym must also
// read, next to its neighbours, as exactly itself: spans are pseudonymised left to right, and a
// pseudonym that the scanner would read differently in its window (a card and a CVV read as one
// longer card) is stepped on, like any cycle walk; Reconstruct goes right to left, so each span
// sees the same window both ways and the walk back stops exactly at the original. The whole output
// is scanned once more at the end: it must show exactly the pseudonyms, or the value fails closed
// (docs/detection.md, "Reversal").

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
import type { KindScheme } from '../techniques/pseudonymise/detected/schemes.ts';
import { walkSteps } from '../techniques/pseudonymise/detected/walk-steps.ts';

/** How one detected kind is handled in this request. */
export interface BoundKind {
  readonly kind: DetectKind;
  /** The rule's technique id (for the metrics; binding it is not needed to name it). */
  readonly techniqueId: string;
  readonly technique: BoundTechnique;
  /** Restrict: a whole value is removed, a span inside text becomes the restricted text. */
  readonly removes: boolean;
  /** Pseudonymise/Reconstruct with an FPE rule: the kind's scheme (valid pseudonyms by construction). */
  readonly scheme?: KindScheme;
}

export type ContentMode = 'forward' | 'pseudonymise' | 'reconstruct' | 'decrypt';

/** A place in a text to reverse: a detected pseudonym, or an `enc:v1:` token (kind unknown). */
interface ReversePiece {
  readonly start: number;
  readonly end: number;
  readonly kind: DetectKind | 'token';
}

/**
 * Walks this far at most. A kind's scheme gives valid pseudonyms by construction, so steps are
 * only taken when a pseudonym reads differently in its context (about one span in ten next to a
 * digit group); a rule whose outputs never fit fails the value rather than spin.
 */
const MAX_WALK = 100;
const NOT_DETECTABLE = 'PSEUDONYM_NOT_DETECTABLE';
/** The value cannot be told apart from its neighbours, as written or once pseudonymised. */
const AMBIGUOUS = 'PSEUDONYM_AMBIGUOUS_IN_CONTEXT';
/** A value still reads in clear after its neighbours were protected, round after round (protectCovering). */
const NOT_COVERED = 'DETECTED_VALUE_NOT_COVERED';
/** A value written in an encoding whose pseudonym would not give back its exact spelling. */
const NOT_EXACT = 'ENCODED_VALUE_NOT_REVERSIBLE';
/** Rounds of protectCovering: each covers more of the text or merges spans; glued readings need one or two. */
const MAX_COVER_ROUNDS = 8;
const TOKEN_PREFIX = 'enc:v1:';
/** Shorter readings of a token tried when it does not open as read (see openToken). */
const MAX_TOKEN_TRIES = 24;

function isTokenSeparator(c: number): boolean {
  return c === 45 || c === 46 || c === 58;
}
/** Characters of context read on each side of a span when checking how it reads. */
const WINDOW = 96;
/** Spans this close to the checked one (or overlapping it) must read exactly as expected. */
const NEAR = 24;

export class ContentFieldAction implements FieldAction {
  readonly byContent = true;
  private readonly anyRemoves: boolean;
  /** The batch being protected (applyBatch): its scans and first steps. */
  private batch: BatchScan | undefined;
  /** The batch's slot of the value `one` is about to step, -1 for none (taken by schemeStep). */
  private nextFirst = -1;

  constructor(
    private readonly run: RunState,
    private readonly scanner: ContentScanner,
    private readonly inText: boolean,
    private readonly kinds: ReadonlyMap<DetectKind, BoundKind>,
    private readonly mode: ContentMode,
  ) {
    this.anyRemoves = (mode === 'forward' || mode === 'pseudonymise') && [...kinds.values()].some((k) => k.removes);
  }

  /** The technique id of the rule for `kind` in this request. */
  techniqueOf(kind: DetectKind): string | undefined {
    return this.kinds.get(kind)?.techniqueId;
  }

  removes(value: unknown): boolean {
    if (!this.anyRemoves || (typeof value !== 'string' && typeof value !== 'number')) return false;
    const kind = this.scanner.wholeKind(String(value));
    if (kind === undefined || !this.kinds.get(kind)!.removes) return false;
    this.run.detectedDone(kind);
    return true;
  }

  apply(value: Scalar, location: string | (() => string)): Scalar {
    const out = this.protect(value);
    if (!(out instanceof DetectedFailure)) return out;
    return this.fail(typeof location === 'string' ? () => location : location, out);
  }

  applyBatch(values: Scalar[], location: (index: number) => string): Scalar[] {
    const out = values.slice();
    const batch = values.length > 1 ? this.prefetch(values) : undefined;
    // Slots index this batch; a batch begun inside it (none does today) puts the outer one back.
    const outer = this.batch;
    this.batch = batch;
    try {
      this.protectEach(out, batch, location);
    } finally {
      this.nextFirst = -1;
      this.batch = outer;
    }
    return out;
  }

  private protectEach(out: Scalar[], batch: BatchScan | undefined, location: (index: number) => string): void {
    for (let i = 0; i < out.length; i++) {
      const v = out[i];
      if (v === null || v === '' || typeof v === 'boolean') continue;
      // No location thunk per cell: one is made only for a cell that fails.
      const r = batch === undefined ? this.protect(v) : this.protect(v, batch.spans[i], batch.firstSlot[i]);
      out[i] = r instanceof DetectedFailure ? this.fail(() => location(i), r) : r;
    }
  }

  /**
   * Pseudonymise and Reconstruct of a batch: every text is scanned once here (the scans are given
   * to protectEach by the text's index in the batch: no map keyed by text) and the first step of
   * every detected value goes through its kind's scheme in one batched call per kind
   * (KindScheme.many), kept in the batch's slot of its span (handed to `one` just before it steps
   * that span: no lookup by value). A step is a pure function of the value under this request's
   * keys, so taking it from here instead of computing it on the spot changes no byte of the output;
   * walking on in context, failures and counts all happen in protectEach as before. Values this
   * cannot take (base64 text, JSON numbers, encoded spellings, values inside tokens) simply miss
   * and are stepped on the spot.
   */
  private prefetch(values: readonly Scalar[]): BatchScan | undefined {
    const reverse = this.mode === 'reconstruct';
    if ((this.mode !== 'pseudonymise' && !reverse) || this.scanner.base64) return undefined;
    const batch = new BatchScan(values.length);
    // Per kind: the values to step, and the slot each result goes to.
    const wanted = new Map<DetectKind, { inputs: string[]; slots: number[] }>();
    for (let v = 0; v < values.length; v++) {
      const value = values[v];
      if (typeof value !== 'string' || value.length < 4) continue;
      if (reverse && value.includes(TOKEN_PREFIX)) continue;
      const spans = this.scanner.scan(value);
      batch.spans[v] = spans;
      if (spans.length === 0) continue;
      const whole = spans.length === 1 && spans[0].start === 0 && spans[0].end === value.length;
      if (!whole && !this.inText) continue;
      batch.firstSlot[v] = batch.inputs.length;
      for (let i = 0; i < spans.length; i++) {
        const span = spans[i];
        const slot = batch.inputs.length;
        // Sliced once: the same string is the value stepped here and walked on in protectEach.
        const input = whole ? value : value.slice(span.start, span.end);
        batch.inputs.push(input);
        batch.kinds.push(span.kind);
        const bound = this.kinds.get(span.kind)!;
        if (bound.scheme === undefined || bound.removes) continue;
        let wants = wanted.get(span.kind);
        if (wants === undefined) wanted.set(span.kind, (wants = { inputs: [], slots: [] }));
        wants.inputs.push(input);
        wants.slots.push(slot);
      }
    }
    const slots = batch.inputs.length;
    batch.outs = new Array<Scalar | undefined>(slots);
    batch.steps = new Int32Array(slots);
    for (const [kind, wants] of wanted) {
      const steps = new Int32Array(wants.inputs.length);
      const outs = this.kinds.get(kind)!.scheme!.many(wants.inputs, reverse, steps);
      for (let k = 0; k < outs.length; k++) {
        batch.outs[wants.slots[k]] = outs[k];
        batch.steps[wants.slots[k]] = steps[k];
      }
    }
    return batch;
  }

  /** The kind's scheme step of `value`: from the batch's first steps when there, counted as if taken here. */
  private schemeStep(kind: DetectKind, scheme: KindScheme, value: Scalar, decrypt: boolean): Scalar {
    const slot = this.nextFirst;
    if (slot >= 0) {
      this.nextFirst = -1;
      const batch = this.batch!;
      const out = batch.outs[slot];
      // The step is a pure function of (kind, value): one prefetched for this very value is its step.
      if (out !== undefined && batch.kinds[slot] === kind && batch.inputs[slot] === value) {
        walkSteps.count += batch.steps[slot];
        return out;
      }
    }
    return decrypt ? scheme.inverse(value) : scheme.forward(value);
  }

  /** The value of span `slot` of the batch, or the text's own slice when it has no slot. */
  private valueAt(text: string, span: ReversePiece, slot: number): string {
    return slot >= 0 ? this.batch!.inputs[slot] : text.slice(span.start, span.end);
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

  detectedSpans(text: string): readonly (readonly [number, number])[] {
    return this.findIn(text, this.mode === 'reconstruct' || this.mode === 'decrypt').map((p) => [p.start, p.end] as const);
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
  /** `scanned`, `slot`: the batch's scan of this very value and its first span's slot (protectEach), if any. */
  private protect(value: Scalar, scanned?: readonly DetectedSpan[], slot = -1): Scalar | DetectedFailure {
    try {
      if (typeof value === 'number') return this.protectNumber(value);
      if (typeof value !== 'string' || value.length < 4) return value;
      // `detect.base64`: a value that is base64 text is protected inside and written back encoded.
      const inner = this.scanner.base64 ? base64Text(value) : undefined;
      if (inner !== undefined) {
        const out = this.protect(inner.text);
        return typeof out === 'string' ? inner.encode(out) : out;
      }
      return this.mode === 'decrypt' || this.mode === 'reconstruct' ? this.reverseText(value, scanned, slot) : this.forwardText(value, scanned, slot);
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

  private forwardText(text: string, scanned?: readonly DetectedSpan[], slot = -1): Scalar {
    if (this.mode === 'forward' && this.inText) return this.forwardCovering(text);
    const spans = scanned ?? this.scanner.scan(text);
    if (spans.length === 0) return text;
    const first = spans[0];
    if (spans.length === 1 && first.start === 0 && first.end === text.length) {
      this.nextFirst = slot;
      return this.one(first.kind, text);
    }
    if (!this.inText) return text;
    if (this.mode === 'pseudonymise') return this.pseudonymiseInText(text, spans, slot);
    return this.protectCovering(text, spans);
  }

  /** Mask, Anonymise, Encrypt and Restrict: readings the scanner left out for an overlapping one are covered with it. */
  private forwardCovering(text: string): Scalar {
    const { spans, overlapped } = this.scanner.scanWithOverlapped(text);
    if (spans.length === 0) return text;
    const first = spans[0];
    if (overlapped.length === 0 && spans.length === 1 && first.start === 0 && first.end === text.length) return this.one(first.kind, text);
    return this.protectCovering(text, overlapped.length === 0 ? spans : unionSpans(spans, overlapped));
  }

  /**
   * Mask, Anonymise, Encrypt and Restrict of spans inside text, until the output shows no value in
   * clear. The scanner keeps one reading where candidates overlap or are glued (`1.0.0.0::1`, two
   * phone readings sharing a digit group); once the kept one is protected, the other can read as a
   * value on its own (`*.*.*.*::1`). So the output is scanned again: a value found there that is not
   * one protected text on its own becomes a span (merged with the spans it touches) and the text is
   * protected again, at most MAX_COVER_ROUNDS times, then the value fails closed. Texts with nothing
   * glued cost one more scan and come out as before.
   */
  private protectCovering(text: string, spans: readonly CoverSpan[]): string {
    const mark = this.run.detectedMark();
    const done = new Map<string, string>();
    let current: readonly CoverSpan[] = spans;
    for (let round = 0; ; round++) {
      let out = '';
      let at = 0;
      /** Per span: where its protected text starts and ends in `out`. */
      const placed: number[] = [];
      for (const span of current) {
        out += text.slice(at, span.start);
        const key = `${span.start}:${span.end}:${span.kind}`;
        let protectedText = done.get(key);
        if (protectedText === undefined) done.set(key, (protectedText = this.protectMerged(text.slice(span.start, span.end), span)));
        placed.push(out.length);
        out += protectedText;
        placed.push(out.length);
        at = span.end;
      }
      out += text.slice(at);
      const uncovered = uncoveredReadings(this.scanner.scan(out), current, placed, this.kinds);
      if (uncovered === undefined || (uncovered.length > 0 && round + 1 >= MAX_COVER_ROUNDS)) throw new DetectedFailure(current[0].kind, NOT_COVERED);
      if (uncovered.length === 0) {
        // Spans protected in earlier rounds or under several kinds count once each, as their kind.
        this.run.settleDetected(mark, current.map((span) => span.kind));
        return out;
      }
      current = unionSpans(current, uncovered);
    }
  }

  /**
   * One span's protected text. A span merged from several readings takes the rule of the first of
   * their kinds (longest reading first) whose result shows no value of its own: a card's Mask keeps
   * letters, so a card reading glued to an e-mail address is masked by the e-mail's rule instead.
   */
  private protectMerged(value: string, span: CoverSpan): string {
    if (span.kinds === undefined) return this.asText(this.one(span.kind, value));
    let first: string | DetectedFailure | undefined;
    for (const kind of span.kinds) {
      let out: string;
      try {
        out = this.asText(this.one(kind, value));
      } catch (err) {
        // A rule that refuses the merged text (an e-mail Mask without an `@`): the next kind's.
        if (!(err instanceof DetectedFailure)) throw err;
        first ??= err;
        continue;
      }
      if (this.scanner.scan(out).length === 0) return out;
      if (first === undefined || first instanceof DetectedFailure) first = out;
    }
    if (first instanceof DetectedFailure) throw first;
    return first!;
  }

  /**
   * Left to right: each span's pseudonym is walked until it reads, between the pseudonyms before it
   * and the original text after it, as exactly itself (and the original must read so too, or
   * Reconstruct could not stop on it). The output is then scanned whole: exactly the pseudonyms.
   */
  private pseudonymiseInText(text: string, spans: readonly DetectedSpan[], slot = -1): string {
    if (this.anyRemoves && spans.some((s) => this.kinds.get(s.kind)!.removes)) {
      // Restricted spans go first, so every pseudonym's window shows what Reconstruct will see.
      const cut = this.splice(text, spans, (span) =>
        this.kinds.get(span.kind)!.removes ? this.asText(this.one(span.kind, text.slice(span.start, span.end))) : text.slice(span.start, span.end),
      );
      const rest = this.scanner.scan(cut);
      const again = rest.find((s) => this.kinds.get(s.kind)!.removes);
      if (again !== undefined) throw new DetectedFailure(again.kind, AMBIGUOUS);
      return rest.length === 0 ? cut : this.pseudonymiseInText(cut, rest);
    }
    if (spans.length === 1) return this.pseudonymiseOne(text, spans[0], slot);
    const parts: string[] = [];
    const placed: ReversePiece[] = [];
    let lastReadWhole = false;
    let length = 0;
    /** The output's last characters (at least WINDOW of them when there are), for the next span's left. */
    let tail = '';
    let at = 0;
    for (let i = 0; i < spans.length; i++) {
      const span = spans[i];
      const before = text.slice(at, span.start);
      parts.push(before);
      length += before.length;
      tail = withTail(tail, before);
      at = span.end;
      const first = slot >= 0 ? slot + i : -1;
      const value = this.valueAt(text, span, first);
      const left = tail.length > WINDOW ? tail.slice(-WINDOW) : tail;
      const leftFrom = length - left.length;
      let leftSpans: readonly ReversePiece[] = NO_PIECES;
      if (placed.length > 0 && placed[placed.length - 1].end > leftFrom) {
        const near: ReversePiece[] = [];
        for (let k = placed.length - 1; k >= 0 && placed[k].end > leftFrom; k--) near.unshift(shift(placed[k], -leftFrom));
        leftSpans = near;
      }
      const right = text.slice(span.end, span.end + WINDOW);
      let rightSpans: readonly ReversePiece[] = NO_PIECES;
      if (i + 1 < spans.length && spans[i + 1].start < span.end + WINDOW) {
        const near: ReversePiece[] = [];
        for (let k = i + 1; k < spans.length && spans[k].start < span.end + WINDOW; k++) near.push(shift(spans[k], -span.end));
        rightSpans = near;
      }
      const context = new Context(this.scanner, left, leftSpans, right, rightSpans);
      // A window holding the whole text, nothing pseudonymised yet: it is the text itself, which
      // reads as the scan found it (the common short note with one value saves a scan).
      const whole = left.length === length && span.end + WINDOW >= text.length;
      if (!(i === 0 && whole) && !context.fits(value, span.kind)) throw new DetectedFailure(span.kind, AMBIGUOUS);
      this.nextFirst = first;
      const pseudonym = this.asText(this.one(span.kind, value, context));
      placed.push({ start: length, end: length + pseudonym.length, kind: pseudonym.startsWith(TOKEN_PREFIX) ? 'token' : span.kind });
      parts.push(pseudonym);
      length += pseudonym.length;
      if (i + 1 < spans.length) tail = withTail(tail, pseudonym);
      lastReadWhole = whole && context.readAll;
    }
    parts.push(text.slice(at));
    const out = parts.join('');
    // One span whose accepted window was the whole output, read in full: checked already.
    if (spans.length === 1 && lastReadWhole) return out;
    // What Reconstruct will read must be exactly what was written.
    const read = findReversible(this.scanner, out);
    if (read.length !== placed.length || read.some((r, k) => !samePiece(r, placed[k]))) {
      const wrong = read.find((r, k) => placed[k] === undefined || !samePiece(r, placed[k])) ?? placed[read.length];
      throw new DetectedFailure(wrong?.kind ?? spans[0].kind, AMBIGUOUS);
    }
    return out;
  }

  /**
   * pseudonymiseInText of a text holding one span (the common note): the same window, walk and
   * checks, without the lists kept for several spans. When the window is the whole text and its
   * accepted reading found exactly the pseudonym, that reading's text is the output.
   */
  private pseudonymiseOne(text: string, span: DetectedSpan, first: number): string {
    const value = this.valueAt(text, span, first);
    const whole = span.start <= WINDOW && span.end + WINDOW >= text.length;
    const context = new Context(this.scanner, text.slice(Math.max(0, span.start - WINDOW), span.start), NO_PIECES, text.slice(span.end, span.end + WINDOW), NO_PIECES);
    if (!whole && !context.fits(value, span.kind)) throw new DetectedFailure(span.kind, AMBIGUOUS);
    this.nextFirst = first;
    const pseudonym = this.asText(this.one(span.kind, value, context));
    if (whole && context.readAll && context.lastRead === pseudonym) return context.lastText;
    const out = text.slice(0, span.start) + pseudonym + text.slice(span.end);
    if (whole && context.readAll) return out;
    // What Reconstruct will read must be exactly what was written: the one pseudonym.
    const kind: ReversePiece['kind'] = pseudonym.startsWith(TOKEN_PREFIX) ? 'token' : span.kind;
    const read = findReversible(this.scanner, out);
    const r = read[0];
    if (read.length === 1 && r.start === span.start && r.end === span.start + pseudonym.length && r.kind === kind) return out;
    const wrong = read.length === 0 ? kind : r.start !== span.start || r.end !== span.start + pseudonym.length || r.kind !== kind ? r.kind : read[1].kind;
    throw new DetectedFailure(wrong, AMBIGUOUS);
  }

  /**
   * Right to left, so that each pseudonym sees the window Pseudonymise saw: the pseudonyms before
   * it, the reconstructed originals after it. Tokens are opened where they are.
   */
  private reconstructInText(text: string, pieces: readonly ReversePiece[], slot = -1): string {
    if (pieces.length === 1 && pieces[0].kind !== 'token') return this.reconstructOne(text, pieces[0], slot);
    const parts: string[] = [];
    /** The output's first WINDOW characters so far, and the spans known in them. */
    let head = '';
    let headSpans: readonly ReversePiece[] = NO_PIECES;
    for (let i = pieces.length - 1; i >= 0; i--) {
      const piece = pieces[i];
      const after = text.slice(piece.end, i + 1 < pieces.length ? pieces[i + 1].start : text.length);
      parts.push(after);
      headSpans = shiftHead(headSpans, after.length, undefined);
      head = (after + head).slice(0, WINDOW);
      // Texts with a token have no slots: pieces are then the spans, in order.
      const first = slot >= 0 ? slot + i : -1;
      const value = this.valueAt(text, piece, first);
      let result: string;
      if (piece.kind === 'token') result = this.asText(this.openToken(value));
      else {
        const leftFrom = Math.max(0, piece.start - WINDOW);
        let leftSpans: readonly ReversePiece[] = NO_PIECES;
        if (i > 0 && pieces[i - 1].end > leftFrom) {
          const near: ReversePiece[] = [];
          for (let k = i - 1; k >= 0 && pieces[k].end > leftFrom; k--) near.unshift(shift(pieces[k], -leftFrom));
          leftSpans = near;
        }
        const context = new Context(this.scanner, text.slice(leftFrom, piece.start), leftSpans, head, headSpans);
        this.nextFirst = first;
        result = this.asText(this.one(piece.kind, value, context));
      }
      parts.push(result);
      headSpans = shiftHead(headSpans, result.length, piece.kind);
      head = (result + head).slice(0, WINDOW);
    }
    parts.push(text.slice(0, pieces[0].start));
    return parts.reverse().join('');
  }

  /**
   * reconstructInText of a text holding one pseudonym: the same window (the text before it, the
   * text after it), no lists. When the window is the whole text, the text its accepted reading
   * read is the output.
   */
  private reconstructOne(text: string, piece: ReversePiece, first: number): string {
    const value = this.valueAt(text, piece, first);
    const context = new Context(this.scanner, text.slice(Math.max(0, piece.start - WINDOW), piece.start), NO_PIECES, text.slice(piece.end, piece.end + WINDOW), NO_PIECES);
    this.nextFirst = first;
    const result = this.asText(this.one(piece.kind as DetectKind, value, context));
    if (piece.start <= WINDOW && text.length - piece.end <= WINDOW && context.lastRead === result) return context.lastText;
    return text.slice(0, piece.start) + result + text.slice(piece.end);
  }

  /**
   * Reconstruct and Decrypt: `enc:v1:` tokens (Encrypt, and the FPE short-value fallback) are opened
   * by the kind whose key authenticates them; Reconstruct also reverses the detected pseudonyms.
   */
  private reverseText(text: string, scanned?: readonly DetectedSpan[], slot = -1): Scalar {
    const tokens: ReversePiece[] = text.includes(TOKEN_PREFIX) ? findTokens(text).map(([start, end]) => ({ start, end, kind: 'token' })) : [];
    const reconstruct = this.mode === 'reconstruct';
    const pieces = reconstruct ? merge(tokens, scanned ?? this.scanner.scan(text)) : tokens;
    // Prefetched texts hold no token (prefetch skips them), so pieces are the spans, in order.
    const first = reconstruct && tokens.length === 0 ? slot : -1;
    if (pieces.length === 0) return text;
    const open = (piece: ReversePiece, value: string): Scalar => (piece.kind === 'token' ? this.openToken(value) : this.one(piece.kind, value));
    if (pieces.length === 1 && pieces[0].start === 0 && pieces[0].end === text.length) {
      this.nextFirst = first;
      return open(pieces[0], text);
    }
    if (!this.inText) return text;
    if (this.mode === 'reconstruct') return this.reconstructInText(text, pieces, first);
    return this.splice(text, pieces, (piece) => this.asText(open(piece, text.slice(piece.start, piece.end))));
  }

  /** What a reader of each piece alone, or of the joined text, would find, protected in place. */
  private protectPieces(pieces: readonly string[]): string[] {
    if (this.mode === 'forward' && this.inText) return this.coverPieces(pieces);
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
    /** Per piece, where its protected values are (Pseudonymise checks how they read). */
    const written: ReversePiece[][] = pieces.map(() => []);
    for (const region of regions) {
      copy(at, region.start);
      let home = 0;
      while (ends[home] <= region.start) home++;
      const value = this.asText(open(region, joined.slice(region.start, region.end)));
      // A restricted span is no pseudonym: nothing of it is read back.
      if (region.kind === 'token' || !this.kinds.get(region.kind)!.removes) {
        const kind = region.kind === 'token' || value.startsWith(TOKEN_PREFIX) ? 'token' : region.kind;
        written[home].push({ start: out[home].length, end: out[home].length + value.length, kind });
      }
      out[home] += value;
      at = region.end;
    }
    copy(at, joined.length);
    if (this.mode === 'pseudonymise') this.checkPiecePseudonyms(out, written);
    return out;
  }

  /**
   * Pseudonyms in text split by markup are made without the window walk (each is whole in its
   * piece), so how they read is checked after: Reconstruct reads each piece alone, and must find
   * there exactly the pseudonyms written; what a reader of the joined text finds must be pseudonyms
   * written, nothing holding clear text. Else the value fails closed, never a silent change on the
   * way back.
   */
  private checkPiecePseudonyms(out: readonly string[], written: readonly ReversePiece[][]): void {
    const all: ReversePiece[] = [];
    let offset = 0;
    for (let i = 0; i < out.length; i++) {
      const read = findReversible(this.scanner, out[i]);
      const mine = written[i];
      if (read.length !== mine.length || read.some((r, k) => !samePiece(r, mine[k]))) {
        const wrong = read.find((r, k) => mine[k] === undefined || !samePiece(r, mine[k])) ?? mine[read.length];
        throw new DetectedFailure(wrong.kind, AMBIGUOUS);
      }
      for (const w of mine) all.push(shift(w, offset));
      offset += out[i].length;
    }
    // The joined reader may miss a pseudonym (`4111…<!---->1` reads as 17 digits), never see clear text in one.
    const wrong = findReversible(this.scanner, out.join('')).find((r) => !all.some((w) => samePiece(r, w)));
    if (wrong !== undefined) throw new DetectedFailure(wrong.kind, AMBIGUOUS);
  }

  /**
   * Mask, Anonymise, Encrypt and Restrict of text split by markup: protectCovering's rule for every
   * reader of it — each piece alone (a DOM's text nodes, SAX events) and the joined text
   * (ElementTree). The readings of all of them, with those the scanner left out for an overlapping
   * one, are protected, each in the piece where it starts; the output is read again the same ways,
   * and a value found there that is not one protected text on its own becomes a span too (merged
   * with those it touches), at most MAX_COVER_ROUNDS rounds, then the value fails closed.
   */
  private coverPieces(pieces: readonly string[]): string[] {
    const joined = pieces.join('');
    const starts: number[] = [];
    let offset = 0;
    for (const piece of pieces) {
      starts.push(offset);
      offset += piece.length;
    }
    const found: DetectedSpan[] = [];
    for (const [text, from] of [...pieces.map((piece, i) => [piece, starts[i]] as const), [joined, 0] as const]) {
      const { spans, overlapped } = this.scanner.scanWithOverlapped(text);
      for (const s of [...spans, ...overlapped]) found.push({ start: s.start + from, end: s.end + from, kind: s.kind });
    }
    if (found.length === 0) return pieces.slice();
    const before = this.run.summary.protected;
    const done = new Map<string, string>();
    let current: readonly CoverSpan[] = unionSpans([], distinctReadings(found));
    for (let round = 0; ; round++) {
      const out = pieces.map(() => '');
      /** Per span: where its protected text starts and ends in the joined output. */
      const placed: number[] = [];
      let length = 0;
      const copy = (from: number, to: number): void => {
        for (let i = 0; i < pieces.length && from < to; i++) {
          const end = starts[i] + pieces[i].length;
          if (from >= end) continue;
          const upTo = Math.min(to, end);
          out[i] += joined.slice(from, upTo);
          length += upTo - from;
          from = upTo;
        }
      };
      let at = 0;
      for (const span of current) {
        copy(at, span.start);
        let home = 0;
        while (starts[home] + pieces[home].length <= span.start) home++;
        const key = `${span.start}:${span.end}:${span.kind}`;
        let protectedText = done.get(key);
        if (protectedText === undefined) done.set(key, (protectedText = this.protectMerged(joined.slice(span.start, span.end), span)));
        placed.push(length);
        out[home] += protectedText;
        length += protectedText.length;
        placed.push(length);
        at = span.end;
      }
      copy(at, joined.length);
      const read: DetectedSpan[] = [...this.scanner.scan(out.join(''))];
      let o = 0;
      for (const piece of out) {
        for (const s of this.scanner.scan(piece)) read.push({ start: s.start + o, end: s.end + o, kind: s.kind });
        o += piece.length;
      }
      const uncovered = uncoveredReadings(distinctReadings(read), current, placed, this.kinds);
      if (uncovered === undefined || (uncovered.length > 0 && round + 1 >= MAX_COVER_ROUNDS)) throw new DetectedFailure(current[0].kind, NOT_COVERED);
      if (uncovered.length === 0) {
        this.run.summary.protected = before + current.length;
        return out;
      }
      current = unionSpans(current, uncovered);
    }
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

  /**
   * Applies the kind's rule to one detected value (a whole value, or a span read in `context`).
   * Pseudonymise and Reconstruct step through the kind's scheme when its rule is an FPE format.
   */
  private one(kind: DetectKind, value: Scalar, context?: Context, carries?: (v: string) => boolean): Scalar {
    const bound = this.kinds.get(kind)!;
    // A value written in an encoding (`４１１１…`, `jane%40example.com`): the rule sees it decoded,
    // its result is written back the same way (src/detect/decode.ts). Encrypt (the one forward rule
    // with an inverse) encrypts the value as written, so Decrypt gives back its exact spelling.
    const encoding = typeof value === 'string' && !(this.mode === 'forward' && bound.technique.inverse) ? valueEncoding(value) : undefined;
    if (encoding !== undefined) {
      // Checked as a whole value: the text around it holds the encoded form, not this one.
      if ((this.mode !== 'pseudonymise' && this.mode !== 'reconstruct') || bound.removes) {
        const out = this.one(kind, encoding.plain);
        return typeof out === 'string' ? encoding.encode(out) : out;
      }
      // The round trip must give back the exact spelling: the pseudonym carries the encoded
      // characters at the same places, and the walk (both ways) skips results that cannot.
      const out = this.one(kind, encoding.plain, undefined, (v) => encoding.encodeAt(v) !== undefined);
      if (typeof out !== 'string') return out;
      if (out.startsWith(TOKEN_PREFIX)) return encoding.encode(out);
      const written = encoding.encodeAt(out)!;
      // What Reconstruct will write back from this pseudonym must be the value as sent.
      if (this.mode === 'pseudonymise' && valueEncoding(written)?.encodeAt(encoding.plain) !== value) throw new DetectedFailure(kind, NOT_EXACT);
      return written;
    }
    let out: Scalar;
    try {
      if (this.mode === 'reconstruct') {
        if (bound.removes || !bound.technique.inverse) return value;
        out = this.walk(bound, value, true, context, carries);
      } else if (this.mode === 'decrypt') return value;
      else if (bound.removes) out = this.run.standIn;
      else if (this.mode === 'pseudonymise') out = this.walk(bound, value, false, context, carries);
      else out = bound.technique.forward(value);
    } catch (err) {
      if (err instanceof ValueError) throw new DetectedFailure(kind, err.reason, err.hint);
      throw err;
    }
    this.run.detectedDone(kind);
    return out;
  }

  /**
   * Applies `step` until the result is detected as `kind` again (or is a fallback token): as a
   * whole value, or in `context` as exactly one span of the kind with its neighbours unchanged;
   * and, for a value written in an encoding, until it `carries` the encoded characters.
   */
  private walk(bound: BoundKind, value: Scalar, decrypt: boolean, context: Context | undefined, carries?: (v: string) => boolean): Scalar {
    const kind = bound.kind;
    if (typeof value === 'string' && value.startsWith(TOKEN_PREFIX)) return this.step(bound, value, decrypt);
    let out = this.step(bound, value, decrypt);
    for (let i = 0; ; i++) {
      if (typeof out === 'string' && out.startsWith(TOKEN_PREFIX)) return out;
      const reads = context !== undefined ? typeof out === 'string' && context.fits(out, kind) : (typeof out === 'number' && this.kindOf(out) === kind) || (typeof out === 'string' && this.scanner.isWhole(out, kind));
      if (reads && (carries === undefined || (typeof out === 'string' && carries(out)))) return out;
      if (i >= MAX_WALK) throw new ValueError(context === undefined ? NOT_DETECTABLE : AMBIGUOUS);
      walkSteps.count++;
      out = this.step(bound, out, decrypt);
    }
  }

  /** One step of the kind's permutation (its scheme, else its rule), each way; no closure per value. */
  private step(bound: BoundKind, value: Scalar, decrypt: boolean): Scalar {
    const scheme = bound.scheme;
    if (scheme !== undefined) return this.schemeStep(bound.kind, scheme, value, decrypt);
    return decrypt ? bound.technique.inverse!(value) : bound.technique.forward(value);
  }

  /**
   * Opens a token with the first kind whose key authenticates it. A token written just before `-`,
   * `.` or `:` and more token characters (a card then `-0000`), or right before the next token,
   * reads on into them: the shorter readings ending at each such place are tried, shortest first,
   * and the rest is read again as text.
   */
  private openToken(token: string): Scalar {
    const first = this.tryOpen(token);
    if (!(first instanceof DetectedFailure)) return first;
    // Where the next token starts (and just before its separator), then every `-`, `.` and `:`
    // from the left, a bounded number of times: the authentication tag accepts only the token as
    // it was written, and a reading that is no token fails before any AEAD.
    const cuts: number[] = [];
    for (let next = token.indexOf(TOKEN_PREFIX, 1); next > 0 && cuts.length < MAX_TOKEN_TRIES; next = token.indexOf(TOKEN_PREFIX, next + 1)) {
      if (isTokenSeparator(token.charCodeAt(next - 1))) cuts.push(next - 1);
      cuts.push(next);
    }
    for (let cut = TOKEN_PREFIX.length + 1; cut < token.length && cuts.length < MAX_TOKEN_TRIES; cut++) {
      if (isTokenSeparator(token.charCodeAt(cut)) && !cuts.includes(cut)) cuts.push(cut);
    }
    for (const cut of cuts) {
      const out = this.tryOpen(token.slice(0, cut));
      // The rest may hold the next token (`…-enc:v1:…`): it is read again on its own.
      if (!(out instanceof DetectedFailure)) return this.asText(out) + this.asText(this.reverseText(token.slice(cut)));
    }
    throw first;
  }

  private tryOpen(token: string): Scalar | DetectedFailure {
    let reason = 'INVALID_CIPHERTEXT';
    let hint: string | undefined;
    for (const bound of this.kinds.values()) {
      const inverse = bound.technique.inverse;
      if (!inverse) continue;
      try {
        const out = inverse(token);
        this.run.detectedDone(bound.kind);
        return out;
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
        reason = err.reason;
        hint = err.hint;
      }
    }
    return new DetectedFailure('token', reason, hint);
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
    if (this.removedByRule) this.run.detectedDone(this.kind);
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

/**
 * A batch's scans and first steps (prefetch): per text by its place in the batch, per detected
 * value by its slot, the place of its span among all the batch's spans (a text's spans take
 * consecutive slots). Flat lists, nothing allocated per text or value.
 */
class BatchScan {
  /** Per text: its spans; undefined where it was not scanned here. */
  readonly spans: (readonly DetectedSpan[] | undefined)[];
  /** Per text: the slot of its first span, -1 when its spans have none (not stepped here). */
  readonly firstSlot: Int32Array;
  /** Per slot: the span's value as sliced, its kind, its first step (undefined: taken on the spot) and the cycle-walk steps that took. */
  readonly inputs: string[] = [];
  readonly kinds: DetectKind[] = [];
  outs: (Scalar | undefined)[] = [];
  steps = new Int32Array(0);

  constructor(texts: number) {
    this.spans = new Array<readonly DetectedSpan[] | undefined>(texts);
    this.firstSlot = new Int32Array(texts).fill(-1);
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

/** No spans known on that side of a window (shared: read-only). */
const NO_PIECES: readonly ReversePiece[] = Object.freeze([]);

/** `tail + piece`, cut to its last WINDOW characters once it grows past 2 * WINDOW. */
function withTail(tail: string, piece: string): string {
  return tail.length + piece.length <= 2 * WINDOW ? tail + piece : (tail + piece).slice(-WINDOW);
}

/**
 * The values found in a protected output that are not one protected text on its own, as spans of
 * the original text: a value made of characters left as written, or of them and the kept part of
 * a protected neighbour (`0000::1`, an IBAN's last four and a glued `::1`), or of two protected
 * texts, covers the original spans it touches and the text between (unionSpans merges them).
 * spans[i]'s protected text is out[placed[2i], placed[2i+1]); the text between two spans is the
 * original text, shifted. Kinds this job does not protect are no leak (a card in a Restrict job
 * that only removes SSNs).
 */
function uncoveredReadings(found: readonly DetectedSpan[], spans: readonly CoverSpan[], placed: readonly number[], kinds: ReadonlyMap<DetectKind, unknown>): DetectedSpan[] | undefined {
  const out: DetectedSpan[] = [];
  /** The original offset of output offset `at`; `end`: as the end of a range. */
  const original = (at: number, end: boolean): number => {
    let k = 0;
    while (k < spans.length && (end ? placed[2 * k] < at : placed[2 * k] <= at)) k++;
    // `at` lies after spans[k-1]'s protected start: inside it (the whole span), or in the clear text after it.
    if (k === 0) return at;
    if (end ? at <= placed[2 * k - 1] : at < placed[2 * k - 1]) return end ? spans[k - 1].end : spans[k - 1].start;
    return spans[k - 1].end + (at - placed[2 * k - 1]);
  };
  for (const f of found) {
    if (!kinds.has(f.kind)) continue;
    let inside: CoverSpan | undefined;
    for (let k = 0; k < spans.length && placed[2 * k] <= f.start; k++) if (f.end <= placed[2 * k + 1]) inside = spans[k];
    // A rule's result that reads as a value of its kind is by design (it is the rule's); a merged
    // span's result that still shows a value has no wider span to fall back on: fail closed.
    if (inside?.kinds !== undefined) return undefined;
    if (inside === undefined) out.push({ start: original(f.start, false), end: original(f.end, true), kind: f.kind });
  }
  return out;
}

/**
 * Spans and more spans as disjoint spans in order. Overlapping ones become one span, merged: its
 * kinds are those of its readings, longest first (protectMerged picks the rule).
 */
function unionSpans(spans: readonly CoverSpan[], more: readonly DetectedSpan[]): CoverSpan[] {
  const all = [...spans, ...more].sort((x, y) => x.start - y.start || y.end - x.end);
  const out: { start: number; end: number; readings: CoverSpan[] }[] = [];
  for (const s of all) {
    const last = out[out.length - 1];
    if (last !== undefined && s.start < last.end) {
      if (s.end > last.end) last.end = s.end;
      last.readings.push(s);
      continue;
    }
    out.push({ start: s.start, end: s.end, readings: [s] });
  }
  return out.map(({ start, end, readings }) => {
    if (readings.length === 1) return readings[0];
    const kinds = [...new Set(readings.sort((x, y) => y.end - y.start - (x.end - x.start)).flatMap((r) => r.kinds ?? [r.kind]))];
    return { start, end, kind: kinds[0], kinds };
  });
}

/** A span protectCovering protects: a detected one, or one merged from overlapping readings (`kinds`). */
interface CoverSpan extends DetectedSpan {
  readonly kinds?: readonly DetectKind[];
}

/**
 * The spans known at the start of the output once `length` characters are written before them:
 * moved on, those still starting inside the window kept, and the written piece's own span first
 * when it is one (`kind`).
 */
function shiftHead(spans: readonly ReversePiece[], length: number, kind: ReversePiece['kind'] | undefined): readonly ReversePiece[] {
  if (spans.length === 0 && kind === undefined) return NO_PIECES;
  const out: ReversePiece[] = kind === undefined ? [] : [{ start: 0, end: length, kind }];
  for (const s of spans) if (s.start + length < WINDOW) out.push(shift(s, length));
  return out;
}

/** Readings found by more than one reader (a piece and the joined text), once each. */
function distinctReadings(found: readonly DetectedSpan[]): DetectedSpan[] {
  const seen = new Set<string>();
  return found.filter((f) => {
    const key = `${f.start}:${f.end}:${f.kind}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A piece moved by `by` characters. */
function shift(piece: ReversePiece, by: number): ReversePiece {
  return { start: piece.start + by, end: piece.end + by, kind: piece.kind };
}

function samePiece(a: ReversePiece, b: ReversePiece): boolean {
  return a.start === b.start && a.end === b.end && a.kind === b.kind;
}

/** What Reconstruct reads in a text: tokens, and the detected spans outside them. */
function findReversible(scanner: ContentScanner, text: string): readonly ReversePiece[] {
  // Read-only by every caller: without a token the scan's own array is the answer (no copy per check).
  if (!text.includes(TOKEN_PREFIX)) return scanner.scan(text);
  return merge(findTokens(text).map(([start, end]) => ({ start, end, kind: 'token' })), scanner.scan(text));
}

/**
 * The surroundings of one span: up to WINDOW characters each side, with the spans known to be
 * there. The same window is built by Pseudonymise (pseudonyms to the left, original text to the
 * right) and by Reconstruct (the same pseudonyms, the reconstructed originals): `fits` answers the
 * same both ways, which is what lets the walk back stop exactly where the walk forward started.
 */
class Context {
  /** The last `fits` that said yes found exactly the known spans, none left out as too far. */
  readAll = false;
  /** The value of the last `fits` that said yes, and the text it read: left, the value, right. */
  lastRead = '';
  lastText = '';

  constructor(
    private readonly scanner: ContentScanner,
    private readonly left: string,
    private readonly leftSpans: readonly ReversePiece[],
    private readonly right: string,
    private readonly rightSpans: readonly ReversePiece[],
  ) {}

  /**
   * `value` placed between left and right reads as one `kind`, and the spans near it as known: the
   * found spans within NEAR of it are, in order, the left spans that end after `at - NEAR`, the
   * value's own span, then the right spans (moved past the value) that start before
   * `after + NEAR`. Compared as they are walked, nothing built per call but the text read.
   */
  fits(value: string, kind: DetectKind): boolean {
    const left = this.left;
    const at = left.length;
    const after = at + value.length;
    const from = at - NEAR;
    const to = after + NEAR;
    const leftSpans = this.leftSpans;
    const rightSpans = this.rightSpans;
    const text = left + value + this.right;
    const found = findReversible(this.scanner, text);
    /** Next left span to expect, whether the value's own span was seen, next right span to expect. */
    let l = 0;
    let own = false;
    let r = 0;
    let k = 0;
    for (let j = 0; j < found.length; j++) {
      const f = found[j];
      if (f.end <= from || f.start >= to) continue;
      k++;
      while (l < leftSpans.length && leftSpans[l].end <= from) l++;
      if (l < leftSpans.length) {
        if (!samePiece(leftSpans[l++], f)) return false;
      } else if (!own) {
        own = true;
        if (f.start !== at || f.end !== after || f.kind !== kind) return false;
      } else {
        const s = rightSpans[r++];
        if (s === undefined || s.start + after >= to || f.start !== s.start + after || f.end !== s.end + after || f.kind !== s.kind) return false;
      }
    }
    // Every expected span was found.
    while (l < leftSpans.length && leftSpans[l].end <= from) l++;
    if (l < leftSpans.length || !own || (r < rightSpans.length && rightSpans[r].start + after < to)) return false;
    this.readAll = found.length === k && k === leftSpans.length + 1 + rightSpans.length;
    this.lastRead = value;
    this.lastText = text;
    return true;
  }
}
