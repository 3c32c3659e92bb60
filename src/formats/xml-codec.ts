// The XML DocumentCodec: protects leaf element values and attribute values by splicing replacements
// into the original text, so every byte outside a protected value is returned exactly as written.

import { DpgError } from '../core/errors.ts';
import type { Scalar } from '../core/types.ts';
import type { CodecOptions, DocumentCodec, FieldAction, FieldResolver } from './codec.ts';
import { DEFAULT_XML_LIMITS, scanXml, type ElementFrame, type XmlEvents, type XmlLimits } from './xml-scanner.ts';
import { decodeCharacterData, escapeAttribute, escapeText, readLeafContent } from './xml-text.ts';

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

/**
 * Walks the scanner's events and collects edits (offset ranges and their replacements) in document
 * order. Attribute edits wait until their element is known to stay: a removed leaf takes its
 * attributes with it, and their techniques never run.
 */
class XmlProtector implements XmlEvents {
  private readonly input: string;
  private readonly resolver: FieldResolver;
  private readonly usesPaths: boolean;
  /** Actions by local name (or by path when the plan uses paths); null = left alone. */
  private readonly actions = new Map<string, FieldAction | null>();
  /** Element paths by level (index 0 = ''), kept only when the plan uses paths. */
  private readonly paths: string[] = [''];
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
    // A child element means the parent is not a leaf and stays: its attributes can be written now.
    if (this.pendingOwner !== null) this.flushAttributes();
    if (this.usesPaths) {
      this.paths[element.level] =
        this.paths[element.level - 1] + '/' + this.input.slice(element.localStart, element.nameEnd);
    }
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
    const input = this.input;
    if (isNamespaceDeclaration(input, nameStart, localStart, nameEnd)) return;
    const name = input.slice(localStart, nameEnd);
    const path = this.usesPaths ? `${this.paths[element.level]}/@${name}` : undefined;
    const action = this.lookup(name, path);
    if (action === undefined) return;
    this.pending.push({
      action,
      value: decodeCharacterData(input.slice(valueStart, valueEnd), true),
      leadStart,
      valueStart,
      valueEnd,
      location: path ?? locationThunk(input, element, `@${name}`),
    });
    this.pendingOwner = element;
  }

  text(): void {}

  cdata(): void {}

  closeElement(element: ElementFrame, endStart: number, endEnd: number): void {
    if (element.hasChildElement) return;
    const input = this.input;
    const name = input.slice(element.localStart, element.nameEnd);
    const path = this.usesPaths ? this.paths[element.level] : undefined;
    const action = this.lookup(name, path);
    if (action === undefined) {
      if (this.pendingOwner !== null) this.flushAttributes();
      return;
    }
    const content = element.selfClosing
      ? { value: '', start: endStart, end: endStart, cdata: false }
      : readLeafContent(input, element.contentStart, endStart);
    if (action.removes(content.value)) {
      this.pending.length = 0;
      this.pendingOwner = NOTHING;
      this.edit(removalStart(input, element), endEnd, '');
      return;
    }
    if (this.pendingOwner !== null) this.flushAttributes();
    const replacement = asText(action.apply(content.value, path ?? locationThunk(input, element, undefined)));
    if (replacement === content.value) return;
    if (element.selfClosing) {
      // `<a/>` gains content: `<a>value</a>`.
      const qname = input.slice(element.nameStart, element.nameEnd);
      this.edit(endStart, endEnd, `>${escapeText(replacement)}</${qname}>`);
      return;
    }
    const canStayCdata = content.cdata && !replacement.includes(']]>') && !replacement.includes('\r');
    this.edit(content.start, content.end, canStayCdata ? `<![CDATA[${replacement}]]>` : escapeText(replacement));
  }

  private flushAttributes(): void {
    const input = this.input;
    for (const attribute of this.pending) {
      if (attribute.action.removes(attribute.value)) {
        this.edit(attribute.leadStart, attribute.valueEnd + 1, '');
        continue;
      }
      const replacement = asText(attribute.action.apply(attribute.value, attribute.location));
      if (replacement === attribute.value) continue;
      const quote = input[attribute.valueStart - 1] === "'" ? "'" : '"';
      this.edit(attribute.valueStart, attribute.valueEnd, escapeAttribute(replacement, quote));
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
 * A location for failure reports, built only if asked: `/Envelope/Body/card` (local names).
 * Frames are reused after this call, so the name offsets are copied now.
 */
function locationThunk(input: string, element: ElementFrame, attribute: string | undefined): () => string {
  const offsets: number[] = [];
  for (let frame: ElementFrame | null = element; frame !== null; frame = frame.parent) {
    offsets.push(frame.localStart, frame.nameEnd);
  }
  return () => {
    let path = '';
    for (let i = offsets.length - 2; i >= 0; i -= 2) path += '/' + input.slice(offsets[i], offsets[i + 1]);
    return attribute === undefined ? path : `${path}/${attribute}`;
  };
}
