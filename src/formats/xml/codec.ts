// The XML DocumentCodec: protects element text and attribute values by splicing replacements into
// the original text, so every byte outside a protected value is returned exactly as written. A
// matched element protects everything beneath it, as a matched JSON key does.

import { DpgError } from '../../core/errors.ts';
import { safeName } from '../../core/safe-name.ts';
import type { Scalar } from '../../core/types.ts';
import { innerAction, type CodecOptions, type DocumentCodec, type FieldAction, type FieldResolver } from '../codec.ts';
import { DEFAULT_XML_LIMITS, isXmlSpace, scanXml, type ElementFrame, type XmlEvents, type XmlLimits } from './scanner.ts';
import { changedStretch, decodeCharacterData, escapeAttribute, escapeText, readLeafContent, type ContentPiece, type LeafContent } from './text.ts';

export interface XmlCodecOptions {
  /** Deepest element nesting accepted (root = 1); deeper documents are MALFORMED_DATA_SET. Default 256. */
  readonly maxDepth?: number;
}

/** An XML codec with its own limits (the default export uses DEFAULT_XML_LIMITS). */
export function createXmlCodec(options: XmlCodecOptions = {}): DocumentCodec {
  const limits: XmlLimits = { maxDepth: options.maxDepth ?? DEFAULT_XML_LIMITS.maxDepth };
  if (!Number.isInteger(limits.maxDepth) || limits.maxDepth < 1) {
    throw new RangeError('maxDepth must be a positive integer');
  }
  return {
    type: 'XML',
    protect(input: string | unknown, resolver: FieldResolver, _options: CodecOptions): string {
      if (typeof input !== 'string') throw new DpgError('INVALID_REQUEST', 'An XML data set must be a string');
      const protector = new XmlProtector(input, resolver);
      scanXml(input, protector, limits);
      return protector.output();
    },
  };
}

export const xmlCodec: DocumentCodec = createXmlCodec();

/** An attribute whose element's fate (kept or removed) is not known yet. */
interface PendingAttribute {
  readonly action: FieldAction;
  readonly value: string;
  readonly leadStart: number;
  readonly valueStart: number;
  readonly valueEnd: number;
  readonly location: string | (() => string);
}

const NOTHING = null;
const CDATA_OPEN = '<![CDATA[';
const CDATA_CLOSE = ']]>';

/**
 * What `removes` is asked about an element with child elements: never empty, like a JSON object
 * under a matched key, so Restrict always removes it.
 */
const CHILD_ELEMENTS: unknown = Object.freeze({ childElements: true });

/**
 * Walks the scanner's events and collects edits (offset ranges and their replacements) in document
 * order. An element's action is its own rule or, failing that, the action of its nearest matched
 * ancestor; its attributes use their own rule or the element's action. Attribute edits wait until
 * their element is known to stay: a removed element takes its attributes and everything beneath it
 * along, and their techniques never run. Whether an element with children stays is decided when its
 * first child element opens, before anything inside it is protected.
 */
class XmlProtector implements XmlEvents {
  private readonly input: string;
  private readonly resolver: FieldResolver;
  private readonly usesPaths: boolean;
  /** Actions by local name (or by path when the plan uses paths); null = left alone. */
  private readonly actions = new Map<string, FieldAction | null>();
  /** Element paths by level (index 0 = ''), kept only when the plan uses paths. */
  private readonly paths: string[] = [''];
  /** The action in force for the open element at each level (own rule, else inherited); [0] = none. */
  private readonly effective: (FieldAction | undefined)[] = [undefined];
  /**
   * Per level: where the open element's current text run starts (just after its last child
   * element), or -1 while no child element has opened (the run starts at its content).
   */
  private readonly runStart: number[] = [-1];
  /** Level of an open element being removed whole (everything inside is skipped); 0 = none. */
  private removingLevel = 0;
  private readonly pending: PendingAttribute[] = [];
  private pendingOwner: ElementFrame | null = NOTHING;
  private readonly chunks: string[] = [];
  private copiedUpTo = 0;

  constructor(input: string, resolver: FieldResolver) {
    this.input = input;
    this.resolver = resolver;
    this.usesPaths = resolver.usesPaths;
  }

  output(): string {
    if (this.chunks.length === 0) return this.input;
    this.chunks.push(this.input.slice(this.copiedUpTo));
    return this.chunks.join('');
  }

  private edit(start: number, end: number, replacement: string): void {
    this.chunks.push(this.input.slice(this.copiedUpTo, start), replacement);
    this.copiedUpTo = end;
  }

  private lookup(name: string, path: string | undefined): FieldAction | undefined {
    const key = path ?? name;
    let action = this.actions.get(key);
    if (action === undefined) {
      action = this.resolver.resolve(name, path) ?? null;
      this.actions.set(key, action);
    }
    return action ?? undefined;
  }

  openElement(element: ElementFrame): void {
    if (this.removingLevel !== 0) return; // inside an element being removed
    const parent = element.parent;
    if (parent !== null && !this.enterChild(parent, element)) return;
    const level = element.level;
    const name = this.input.slice(element.localStart, element.nameEnd);
    let path: string | undefined;
    if (this.usesPaths) {
      path = this.paths[level - 1] + '/' + name;
      this.paths[level] = path;
    }
    this.effective[level] = innerAction(this.lookup(name, path), this.effective[level - 1]);
    this.runStart[level] = -1;
  }

  /**
   * A child element opens inside `parent`. On the first one, the parent is known to have child
   * elements: decide whether it is removed whole (false = skip everything until it closes) or stays
   * (its attributes can be written now). Then protect the parent's text run before the child.
   */
  private enterChild(parent: ElementFrame, child: ElementFrame): boolean {
    const level = parent.level;
    const action = this.effective[level];
    let start = this.runStart[level];
    if (start < 0) {
      if (action !== undefined && action.removes(CHILD_ELEMENTS, this.locationOf(parent))) {
        this.pending.length = 0;
        this.pendingOwner = NOTHING;
        this.removingLevel = level;
        return false;
      }
      if (this.pendingOwner !== null) this.flushAttributes();
      start = parent.contentStart;
    }
    if (action !== undefined) this.protectTextRun(parent, action, start, child.tagStart);
    return true;
  }

  attribute(
    element: ElementFrame,
    leadStart: number,
    nameStart: number,
    localStart: number,
    nameEnd: number,
    valueStart: number,
    valueEnd: number,
  ): void {
    if (this.removingLevel !== 0) return;
    const input = this.input;
    if (isNamespaceDeclaration(input, nameStart, localStart, nameEnd)) return;
    const name = input.slice(localStart, nameEnd);
    const path = this.usesPaths ? `${this.paths[element.level]}/@${name}` : undefined;
    // Fail closed: an attribute of (or beneath) a matched element is protected with it.
    const action = innerAction(this.lookup(name, path), this.effective[element.level]);
    if (action === undefined) return;
    this.pending.push({
      action,
      value: decodeCharacterData(input.slice(valueStart, valueEnd), true),
      leadStart,
      valueStart,
      valueEnd,
      location: locationThunk(input, element, `@${safeName(name)}`),
    });
    this.pendingOwner = element;
  }

  text(): void {}

  cdata(): void {}

  closeElement(element: ElementFrame, endStart: number, endEnd: number): void {
    const level = element.level;
    if (this.removingLevel !== 0) {
      if (level > this.removingLevel) return;
      this.removingLevel = 0;
      this.edit(removalStart(this.input, element), endEnd, '');
    } else if (element.hasChildElement) {
      const action = this.effective[level];
      if (action !== undefined) this.protectTextRun(element, action, this.runStart[level], endStart);
    } else {
      this.closeLeaf(element, endStart, endEnd);
    }
    if (level > 1) this.runStart[level - 1] = endEnd;
  }

  /** An element without child elements: its whole content is one value (comments and PIs skipped). */
  private closeLeaf(element: ElementFrame, endStart: number, endEnd: number): void {
    const input = this.input;
    const action = this.effective[element.level];
    if (action === undefined) {
      if (this.pendingOwner !== null) this.flushAttributes();
      return;
    }
    const content = element.selfClosing
      ? { value: '', start: endStart, end: endStart, cdata: false }
      : readLeafContent(input, element.contentStart, endStart);
    if (action.removes(content.value, this.locationOf(element))) {
      this.pending.length = 0;
      this.pendingOwner = NOTHING;
      this.edit(removalStart(input, element), endEnd, '');
      return;
    }
    if (this.pendingOwner !== null) this.flushAttributes();
    if (content.pieces !== undefined) {
      this.protectPieces(content.pieces, content.value, action, this.locationOf(element));
      return;
    }
    const replacement = asText(action.apply(content.value, this.locationOf(element)));
    if (replacement === content.value) return;
    if (element.selfClosing) {
      // `<a/>` gains content: `<a>value</a>`.
      const qname = input.slice(element.nameStart, element.nameEnd);
      this.edit(endStart, endEnd, `>${escapeText(replacement)}</${qname}>`);
      return;
    }
    this.writeContent(content, replacement);
  }

  /**
   * One text run of an element with child elements (the content between two of its tags). Read
   * like a leaf's content; a run holding only whitespace (layout), comments or PIs is no value.
   */
  private protectTextRun(element: ElementFrame, action: FieldAction, start: number, end: number): void {
    const content = readLeafContent(this.input, start, end);
    if (isBlank(content.value)) return;
    if (content.pieces !== undefined) {
      this.protectPieces(content.pieces, content.value, action, this.locationOf(element));
      return;
    }
    const replacement = asText(action.apply(content.value, this.locationOf(element)));
    if (replacement !== content.value) this.writeContent(content, replacement);
  }

  /**
   * A value split by comments, processing instructions or CDATA sections. Every piece is written
   * back in its own place, so the markup stays as it was (never dropped, never moved). Detection
   * looks at each piece alone and at the joined text (applyPieces); any other rule protects the
   * joined value — what ElementTree reads — and writes it into the first piece, emptying the
   * others, so a reader of the first text node (minidom) sees the protected value too.
   */
  private protectPieces(pieces: readonly ContentPiece[], joined: string, action: FieldAction, location: string | (() => string)): void {
    let values: readonly string[];
    if (action.applyPieces !== undefined) values = action.applyPieces(pieces.map((piece) => piece.value), location);
    else {
      const replacement = asText(action.apply(joined, location));
      if (replacement === joined) return;
      values = pieces.map((_, i) => (i === 0 ? replacement : ''));
    }
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i];
      const value = values[i];
      if (value === piece.value) continue;
      if (!piece.cdata) this.editText(piece.start, piece.end, piece.value, value);
      else if (fitsCdata(value)) this.edit(piece.start, piece.end, value);
      // CDATA cannot hold these: the section becomes escaped text (a reader sees the same value).
      else this.edit(piece.start - CDATA_OPEN.length, piece.end + CDATA_CLOSE.length, escapeText(value));
    }
  }

  private writeContent(content: LeafContent, replacement: string): void {
    if (!content.cdata) return this.editText(content.start, content.end, content.value, replacement);
    this.edit(content.start, content.end, fitsCdata(replacement) ? `<![CDATA[${replacement}]]>` : escapeText(replacement));
  }

  /** Text start..end of the input, read as `value`, now `replacement`: only the changed stretch is rewritten. */
  private editText(start: number, end: number, value: string, replacement: string): void {
    const [from, to, text] = changedStretch(this.input.slice(start, end), value, replacement, escapeText);
    this.edit(start + from, start + to, text);
  }

  private locationOf(element: ElementFrame): string | (() => string) {
    return locationThunk(this.input, element, undefined);
  }

  private flushAttributes(): void {
    const input = this.input;
    for (const attribute of this.pending) {
      if (attribute.action.removes(attribute.value, attribute.location)) {
        this.edit(attribute.leadStart, attribute.valueEnd + 1, '');
        continue;
      }
      const replacement = asText(attribute.action.apply(attribute.value, attribute.location));
      if (replacement === attribute.value) continue;
      const quote = input[attribute.valueStart - 1] === "'" ? "'" : '"';
      const [from, to, text] = changedStretch(input.slice(attribute.valueStart, attribute.valueEnd), attribute.value, replacement, (v) => escapeAttribute(v, quote));
      this.edit(attribute.valueStart + from, attribute.valueStart + to, text);
    }
    this.pending.length = 0;
    this.pendingOwner = NOTHING;
  }
}

/** `xmlns` and `xmlns:p` declare namespaces: they are structure, never protected fields. */
function isNamespaceDeclaration(input: string, nameStart: number, localStart: number, nameEnd: number): boolean {
  if (localStart === nameStart) return nameEnd - nameStart === 5 && input.startsWith('xmlns', nameStart);
  return localStart - nameStart === 6 && input.startsWith('xmlns:', nameStart);
}

function isBlank(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (!isXmlSpace(value.charCodeAt(i))) return false;
  return true;
}

/** A technique's result as text; null (nullify) becomes empty content. */
function asText(value: Scalar): string {
  return typeof value === 'string' ? value : value === null ? '' : String(value);
}

/**
 * Where a removed element's text starts: with the whitespace-only run before it (its indentation),
 * so the lines around it stay tidy; if that run holds other text, only the element goes.
 */
function removalStart(input: string, element: ElementFrame): number {
  for (let i = element.precedingTextStart; i < element.tagStart; i++) {
    const c = input.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 9 && c !== 13) return element.tagStart;
  }
  return element.precedingTextStart;
}

/**
 * A location for failure reports, built only if asked: `/Envelope/Body/card` (local names; a name
 * that is not a plain identifier is withheld, `/Envelope/?/card`). Frames are reused after this
 * call, so the name offsets are copied now.
 */
function locationThunk(input: string, element: ElementFrame, attribute: string | undefined): () => string {
  const offsets: number[] = [];
  for (let frame: ElementFrame | null = element; frame !== null; frame = frame.parent) {
    offsets.push(frame.localStart, frame.nameEnd);
  }
  return () => {
    let path = '';
    for (let i = offsets.length - 2; i >= 0; i -= 2) path += '/' + safeName(input.slice(offsets[i], offsets[i + 1]));
    return attribute === undefined ? path : `${path}/${attribute}`;
  };
}

/** Text a CDATA section can hold as it is: no `]]>`, and no CR (a reader would turn it into LF). */
function fitsCdata(text: string): boolean {
  return !text.includes(CDATA_CLOSE) && !text.includes('\r');
}
