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

  /** The protected value, or the failure of one of its detected values (never thrown past here). */
  private protect(value: Scalar): Scalar | DetectedFailure {
    try {
      if (typeof value === 'number') return this.protectNumber(value);
      if (typeof value !== 'string' || value.length < 4) return value;
      return this.mode === 'decrypt' || this.mode === 'reconstruct' ? this.reverseText(value) : this.forwardText(value);
    } catch (err) {
      if (err instanceof DetectedFailure) return err;
      throw err;
    }
  }

  private fail(location: () => string, failure: DetectedFailure): Scalar {
    return this.run.fail(() => `${location()} (detected ${failure.kind})`, failure.reason);
  }

  /** A JSON number can only be a whole card number (the other kinds need separators or letters). */
  private protectNumber(value: number): Scalar {
    if (!Number.isSafeInteger(value) || value < 1e11 || this.mode === 'decrypt') return value;
    const kind = this.scanner.wholeKind(String(value));
    return kind === undefined ? value : this.one(kind, value);
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

  /** Applies the kind's rule to one detected value (a whole value or a span). */
  private one(kind: DetectKind, value: Scalar): Scalar {
    const bound = this.kinds.get(kind)!;
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
      if (err instanceof ValueError) throw new DetectedFailure(kind, err.reason);
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
      if ((typeof out === 'string' || typeof out === 'number') && this.scanner.wholeKind(String(out)) === kind) return out;
      out = step(out);
    }
    throw new ValueError(NOT_DETECTABLE);
  }

  /** Opens a token with the first kind whose key authenticates it. */
  private openToken(token: string): Scalar {
    let reason = 'INVALID_CIPHERTEXT';
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
      }
    }
    throw new DetectedFailure('token', reason);
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

class DetectedFailure extends Error {
  constructor(
    readonly kind: string,
    readonly reason: string,
  ) {
    super(reason);
  }
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
