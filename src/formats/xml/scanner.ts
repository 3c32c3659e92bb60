// A strict, single-pass, non-recursive XML 1.0 well-formedness scanner that reports where things are
// (offsets into the original text) rather than building a tree, so callers can splice values in place.

import { DpgError } from '../../core/errors.ts';
import { unsupportedDeclaration } from './declaration.ts';

export interface XmlLimits {
  /** Deepest element nesting accepted (the root element is level 1). */
  readonly maxDepth: number;
}

export const DEFAULT_XML_LIMITS: XmlLimits = { maxDepth: 256 };

/**
 * One open element. Frames are pooled per depth and reused by the next element at that depth, so
 * an event handler must copy what it needs before returning.
 */
export class ElementFrame {
  /** Nesting level, root = 1. */
  readonly level: number;
  readonly parent: ElementFrame | null;
  /** Offset of `<` of the start tag. */
  tagStart = 0;
  /** Qualified name `nameStart..nameEnd`; the local name (after any prefix) starts at localStart. */
  nameStart = 0;
  nameEnd = 0;
  localStart = 0;
  /** End of the markup before this start tag: the text between it and tagStart precedes the element. */
  precedingTextStart = 0;
  /** Offset just after the start tag's `>` (for `<a/>`, after `/>`). */
  contentStart = 0;
  selfClosing = false;
  hasChildElement = false;

  constructor(level: number, parent: ElementFrame | null) {
    this.level = level;
    this.parent = parent;
  }
}

/** What the scanner reports, in document order. Offsets index the input string. */
export interface XmlEvents {
  /** A start tag's name has been read; its attributes follow. */
  openElement(element: ElementFrame): void;
  /**
   * One attribute of the element being opened. `leadStart` is where the whitespace before the name
   * starts (removing leadStart..valueEnd+1 removes the attribute tidily); the value is the raw text
   * between the quotes, valueStart..valueEnd, with the quote character at valueStart - 1.
   */
  attribute(
    element: ElementFrame,
    leadStart: number,
    nameStart: number,
    localStart: number,
    nameEnd: number,
    valueStart: number,
    valueEnd: number,
  ): void;
  /** Character data (raw, references not decoded) directly inside an element. */
  text(element: ElementFrame, start: number, end: number): void;
  /** A CDATA section's content, start..end, directly inside an element. */
  cdata(element: ElementFrame, start: number, end: number): void;
  /**
   * The element ends: endStart..endEnd is its end tag, or for `<a/>` the `/>`. Content runs from
   * element.contentStart to endStart.
   */
  closeElement(element: ElementFrame, endStart: number, endEnd: number): void;
}

/** 1-based line and column of an offset, for error messages. */
export function lineAndColumn(input: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = input.indexOf('\n'); i !== -1 && i < offset; i = input.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

/** The MALFORMED_DATA_SET error: a position and our own reason, never any part of the input. */
export function malformedXml(input: string, offset: number, reason: string): DpgError {
  const { line, column } = lineAndColumn(input, Math.min(offset, input.length));
  return new DpgError('MALFORMED_DATA_SET', `XML does not parse at line ${line}, column ${column}: ${reason}`);
}

const enum Ch {
  Tab = 9,
  LF = 10,
  CR = 13,
  Space = 32,
  Bang = 33,
  Quote = 34,
  Hash = 35,
  Amp = 38,
  Apos = 39,
  Dash = 45,
  Slash = 47,
  Colon = 58,
  Semi = 59,
  Lt = 60,
  Eq = 61,
  Gt = 62,
  Question = 63,
  LBracket = 91,
  RBracket = 93,
  Percent = 37,
  x = 120,
}

// ASCII name characters: 1 = may start a name, 2 = may only continue one. Non-ASCII characters
// are accepted as name characters (a simplification of the XML Name production).
const NAME_CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[A-Za-z_:]/.test(ch)) NAME_CLASS[c] = 1;
  else if (/[0-9.\-]/.test(ch)) NAME_CLASS[c] = 2;
}

function isNameStart(c: number): boolean {
  return c < 128 ? NAME_CLASS[c] === 1 : c >= 0xc0 && c !== 0xd7 && c !== 0xf7;
}

function isNameChar(c: number): boolean {
  return c < 128 ? NAME_CLASS[c] !== 0 : c === 0xb7 || (c >= 0xc0 && c !== 0xd7 && c !== 0xf7);
}

export function isXmlSpace(c: number): boolean {
  return c === Ch.Space || c === Ch.LF || c === Ch.Tab || c === Ch.CR;
}

// Characters XML 1.0 forbids anywhere in a document (C0 controls other than tab, LF and CR).
const FORBIDDEN_CHARS = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/;

/** Above this many attributes on one element, duplicates are found with a Set instead of pairwise. */
const PAIRWISE_DUPLICATE_LIMIT = 12;

/**
 * Scans `input`, calling `events` for elements, attributes, text and CDATA. Throws DpgError
 * MALFORMED_DATA_SET at the first well-formedness error. Entity declarations in a DOCTYPE are
 * refused (so nothing external is ever read and nothing expands); only the five predefined entities
 * and character references are accepted.
 */
export function scanXml(input: string, events: XmlEvents, limits: XmlLimits = DEFAULT_XML_LIMITS): void {
  new XmlScanner(input, events, limits).run();
}

class XmlScanner {
  private readonly input: string;
  private readonly events: XmlEvents;
  private readonly maxDepth: number;
  private readonly length: number;
  private readonly frames: ElementFrame[] = [];
  private depth = 0;
  private rootSeen = false;
  private doctypeSeen = false;
  /** Where the last markup ended: the text run before the current `<` starts here. */
  private markupEnd = 0;
  // Next occurrence at or after the position it was looked up from: lookups only move forward, so
  // each kind of search covers the input at most once in total (no quadratic rescans).
  private nextAmp = -1;
  private nextLt = -1;
  private nextCdataEnd = -1;
  // Attribute names of the start tag being read, for the duplicate check.
  private readonly attrNameStarts: number[] = [];
  private readonly attrNameEnds: number[] = [];
  private attrCount = 0;
  private readonly attrNames = new Set<string>();

  constructor(input: string, events: XmlEvents, limits: XmlLimits) {
    this.input = input;
    this.events = events;
    this.maxDepth = limits.maxDepth;
    this.length = input.length;
  }

  private fail(offset: number, reason: string): never {
    throw malformedXml(this.input, offset, reason);
  }

  run(): void {
    const input = this.input;
    const forbidden = FORBIDDEN_CHARS.exec(input);
    if (forbidden !== null) this.fail(forbidden.index, 'character not allowed in XML');

    let pos = input.charCodeAt(0) === 0xfeff ? 1 : 0;
    if (input.startsWith('<?xml', pos) && isXmlSpace(input.charCodeAt(pos + 5))) {
      const end = input.indexOf('?>', pos + 5);
      if (end === -1) this.fail(pos, 'XML declaration is not closed');
      // The upstream's parser decodes by the declared encoding: one we do not read is refused.
      const unsupported = unsupportedDeclaration(input);
      if (unsupported !== undefined) throw new DpgError('UNSUPPORTED_DATA_SET_TYPE', unsupported);
      pos = end + 2;
    }
    const n = this.length;
    while (pos < n) {
      let lt = input.indexOf('<', pos);
      if (lt === -1) lt = n;
      this.markupEnd = pos;
      if (lt > pos) this.textRun(pos, lt);
      if (lt >= n) break;
      const next = input.charCodeAt(lt + 1);
      if (next === Ch.Slash) pos = this.endTag(lt);
      else if (next === Ch.Bang) pos = this.bangMarkup(lt);
      else if (next === Ch.Question) pos = this.processingInstruction(lt);
      else pos = this.startTag(lt);
    }
    if (this.depth > 0) this.fail(this.frames[this.depth - 1].tagStart, 'element is never closed');
    if (!this.rootSeen) this.fail(n, 'no root element');
  }

  private textRun(start: number, end: number): void {
    if (this.depth === 0) {
      for (let i = start; i < end; i++) {
        if (!isXmlSpace(this.input.charCodeAt(i))) {
          this.fail(i, this.rootSeen ? 'content after the root element' : 'text before the root element');
        }
      }
      return;
    }
    this.checkReferences(start, end);
    if (this.nextCdataEnd < start) this.nextCdataEnd = this.indexOrEnd(']]>', start);
    if (this.nextCdataEnd < end) this.fail(this.nextCdataEnd, "']]>' is not allowed in text");
    this.events.text(this.frames[this.depth - 1], start, end);
  }

  private indexOrEnd(search: string, from: number): number {
    const i = this.input.indexOf(search, from);
    return i === -1 ? this.length : i;
  }

  /** Every `&` in start..end must begin a predefined entity or character reference. */
  private checkReferences(start: number, end: number): void {
    if (this.nextAmp < start) this.nextAmp = this.indexOrEnd('&', start);
    while (this.nextAmp < end) {
      const after = this.reference(this.nextAmp, end);
      this.nextAmp = this.indexOrEnd('&', after);
    }
  }

  /** Validates the reference at `amp`; returns the offset after its `;`. */
  private reference(amp: number, end: number): number {
    const input = this.input;
    const semi = input.indexOf(';', amp + 1);
    if (semi === -1 || semi >= end || semi - amp > 40) this.fail(amp, "'&' does not start a valid reference");
    if (input.charCodeAt(amp + 1) === Ch.Hash) {
      const hex = input.charCodeAt(amp + 2) === Ch.x;
      const digits = input.slice(amp + (hex ? 3 : 2), semi);
      if (digits.length === 0 || !(hex ? /^[0-9A-Fa-f]+$/ : /^[0-9]+$/).test(digits)) {
        this.fail(amp, 'invalid character reference');
      }
      const code = Number.parseInt(digits, hex ? 16 : 10);
      const allowed =
        code === 0x9 ||
        code === 0xa ||
        code === 0xd ||
        (code >= 0x20 && code <= 0xd7ff) ||
        (code >= 0xe000 && code <= 0xfffd) ||
        (code >= 0x10000 && code <= 0x10ffff);
      if (!allowed) this.fail(amp, 'character reference to a character not allowed in XML');
      return semi + 1;
    }
    switch (input.slice(amp + 1, semi)) {
      case 'lt':
      case 'gt':
      case 'amp':
      case 'apos':
      case 'quot':
        return semi + 1;
      default:
        return this.fail(amp, 'reference to an undeclared entity (only the predefined entities are accepted)');
    }
  }

  private startTag(lt: number): number {
    const input = this.input;
    if (this.depth === 0 && this.rootSeen) this.fail(lt, 'content after the root element');
    if (this.depth >= this.maxDepth) this.fail(lt, `elements nest deeper than ${this.maxDepth} levels`);
    const nameStart = lt + 1;
    if (!isNameStart(input.charCodeAt(nameStart))) this.fail(lt, "'<' does not start a tag");
    let p = nameStart + 1;
    let localStart = nameStart;
    for (let c = input.charCodeAt(p); isNameChar(c); c = input.charCodeAt(++p)) {
      if (c === Ch.Colon) localStart = p + 1;
    }
    if (localStart === p) localStart = nameStart; // `<a:>`: no local part, use the whole name

    const parent = this.depth > 0 ? this.frames[this.depth - 1] : null;
    let frame = this.frames[this.depth];
    if (frame === undefined) {
      frame = new ElementFrame(this.depth + 1, parent);
      this.frames.push(frame);
    }
    if (parent !== null) parent.hasChildElement = true;
    frame.tagStart = lt;
    frame.nameStart = nameStart;
    frame.nameEnd = p;
    frame.localStart = localStart;
    frame.hasChildElement = false;
    frame.selfClosing = false;
    frame.precedingTextStart = this.markupEnd;
    this.events.openElement(frame);

    this.attrCount = 0;
    for (;;) {
      const leadStart = p;
      let c = input.charCodeAt(p);
      while (isXmlSpace(c)) c = input.charCodeAt(++p);
      if (c === Ch.Gt) {
        frame.contentStart = p + 1;
        break;
      }
      if (c === Ch.Slash) {
        if (input.charCodeAt(p + 1) !== Ch.Gt) this.fail(p, "'/' in a tag must be followed by '>'");
        frame.selfClosing = true;
        frame.contentStart = p + 2;
        break;
      }
      if (Number.isNaN(c)) this.fail(lt, 'tag is not closed');
      if (p === leadStart) this.fail(p, 'attributes must be separated by whitespace');
      if (!isNameStart(c)) this.fail(p, 'invalid attribute name');
      const attrNameStart = p;
      let attrLocalStart = p;
      for (c = input.charCodeAt(++p); isNameChar(c); c = input.charCodeAt(++p)) {
        if (c === Ch.Colon) attrLocalStart = p + 1;
      }
      const attrNameEnd = p;
      if (attrLocalStart === attrNameEnd) attrLocalStart = attrNameStart;
      while (isXmlSpace(c)) c = input.charCodeAt(++p);
      if (c !== Ch.Eq) this.fail(p, "attribute name must be followed by '='");
      c = input.charCodeAt(++p);
      while (isXmlSpace(c)) c = input.charCodeAt(++p);
      if (c !== Ch.Quote && c !== Ch.Apos) this.fail(p, 'attribute value must be quoted');
      const valueStart = p + 1;
      const valueEnd = input.indexOf(c === Ch.Quote ? '"' : "'", valueStart);
      if (valueEnd === -1) this.fail(p, 'attribute value is not closed');
      if (this.nextLt < valueStart) this.nextLt = this.indexOrEnd('<', valueStart);
      if (this.nextLt < valueEnd) this.fail(this.nextLt, "'<' is not allowed in an attribute value");
      this.checkReferences(valueStart, valueEnd);
      this.checkDuplicate(attrNameStart, attrNameEnd);
      this.events.attribute(frame, leadStart, attrNameStart, attrLocalStart, attrNameEnd, valueStart, valueEnd);
      p = valueEnd + 1;
    }

    this.rootSeen = true;
    if (frame.selfClosing) {
      this.events.closeElement(frame, frame.contentStart - 2, frame.contentStart);
    } else {
      this.depth++;
    }
    return frame.contentStart;
  }

  private checkDuplicate(start: number, end: number): void {
    const starts = this.attrNameStarts;
    const ends = this.attrNameEnds;
    const count = this.attrCount;
    if (count < PAIRWISE_DUPLICATE_LIMIT) {
      for (let i = 0; i < count; i++) {
        if (this.sameText(starts[i], ends[i], start, end)) this.fail(start, 'duplicate attribute');
      }
      starts[count] = start;
      ends[count] = end;
      if (count + 1 === PAIRWISE_DUPLICATE_LIMIT) {
        // Many attributes: from here on one Set per tag keeps the check linear.
        this.attrNames.clear();
        for (let i = 0; i <= count; i++) this.attrNames.add(this.input.slice(starts[i], ends[i]));
      }
    } else {
      const name = this.input.slice(start, end);
      if (this.attrNames.has(name)) this.fail(start, 'duplicate attribute');
      this.attrNames.add(name);
    }
    this.attrCount = count + 1;
  }

  private sameText(aStart: number, aEnd: number, bStart: number, bEnd: number): boolean {
    if (aEnd - aStart !== bEnd - bStart) return false;
    const input = this.input;
    for (let i = 0; i < aEnd - aStart; i++) {
      if (input.charCodeAt(aStart + i) !== input.charCodeAt(bStart + i)) return false;
    }
    return true;
  }

  private endTag(lt: number): number {
    const input = this.input;
    if (this.depth === 0) this.fail(lt, 'end tag without a matching start tag');
    const frame = this.frames[this.depth - 1];
    const nameLength = frame.nameEnd - frame.nameStart;
    const nameStart = lt + 2;
    if (
      !this.sameText(frame.nameStart, frame.nameEnd, nameStart, nameStart + nameLength) ||
      isNameChar(input.charCodeAt(nameStart + nameLength))
    ) {
      this.fail(lt, 'end tag does not match the open element');
    }
    let p = nameStart + nameLength;
    let c = input.charCodeAt(p);
    while (isXmlSpace(c)) c = input.charCodeAt(++p);
    if (c !== Ch.Gt) this.fail(p, "end tag must close with '>'");
    this.events.closeElement(frame, lt, p + 1);
    this.depth--;
    return p + 1;
  }

  /** `<!--`, `<![CDATA[` or `<!DOCTYPE`. */
  private bangMarkup(lt: number): number {
    const input = this.input;
    if (input.startsWith('<!--', lt)) return this.comment(lt);
    if (input.startsWith('<![CDATA[', lt)) {
      if (this.depth === 0) this.fail(lt, 'CDATA section outside the root element');
      const end = input.indexOf(']]>', lt + 9);
      if (end === -1) this.fail(lt, 'CDATA section is not closed');
      this.events.cdata(this.frames[this.depth - 1], lt + 9, end);
      return end + 3;
    }
    if (input.startsWith('<!DOCTYPE', lt)) {
      if (this.rootSeen || this.doctypeSeen) this.fail(lt, 'DOCTYPE is only allowed once, before the root element');
      this.doctypeSeen = true;
      return this.doctype(lt);
    }
    return this.fail(lt, "unrecognised markup after '<!'");
  }

  private comment(lt: number): number {
    const end = this.input.indexOf('--', lt + 4);
    if (end === -1) this.fail(lt, 'comment is not closed');
    if (this.input.charCodeAt(end + 2) !== Ch.Gt) this.fail(end, "'--' is not allowed inside a comment");
    return end + 3;
  }

  private processingInstruction(lt: number): number {
    const input = this.input;
    let p = lt + 2;
    if (!isNameStart(input.charCodeAt(p))) this.fail(lt, 'processing instruction without a target');
    while (isNameChar(input.charCodeAt(p))) p++;
    if (p - lt === 5 && input.slice(lt + 2, p).toLowerCase() === 'xml') {
      this.fail(lt, 'XML declaration is only allowed at the start of the document');
    }
    const c = input.charCodeAt(p);
    if (!isXmlSpace(c) && !(c === Ch.Question && input.charCodeAt(p + 1) === Ch.Gt)) {
      this.fail(p, 'invalid processing instruction target');
    }
    const end = input.indexOf('?>', p);
    if (end === -1) this.fail(lt, 'processing instruction is not closed');
    return end + 2;
  }

  /**
   * `<!DOCTYPE name (SYSTEM|PUBLIC literals)? [internal subset]? >`. External identifiers are kept
   * as text and never fetched. In the internal subset, element, attribute-list and notation
   * declarations, comments and processing instructions pass; entity declarations and parameter
   * entity references are refused: that closes XXE and entity-expansion attacks (billion laughs)
   * at the door instead of bounding them.
   */
  private doctype(lt: number): number {
    const input = this.input;
    let p = lt + 9;
    if (!isXmlSpace(input.charCodeAt(p))) this.fail(p, 'DOCTYPE must be followed by whitespace');
    for (;;) {
      const c = input.charCodeAt(p);
      if (isXmlSpace(c)) p++;
      else if (c === Ch.Gt) return p + 1;
      else if (c === Ch.Quote || c === Ch.Apos) p = this.quoted(p);
      else if (c === Ch.LBracket) p = this.internalSubset(p + 1);
      else if (isNameChar(c)) p++;
      else this.fail(Number.isNaN(c) ? lt : p, Number.isNaN(c) ? 'DOCTYPE is not closed' : 'invalid DOCTYPE');
    }
  }

  private quoted(p: number): number {
    const end = this.input.indexOf(this.input[p], p + 1);
    if (end === -1) this.fail(p, 'quoted literal is not closed');
    return end + 1;
  }

  /** Returns the offset after the closing `]`. */
  private internalSubset(p: number): number {
    const input = this.input;
    for (;;) {
      const c = input.charCodeAt(p);
      if (isXmlSpace(c)) {
        p++;
      } else if (c === Ch.RBracket) {
        return p + 1;
      } else if (c === Ch.Percent) {
        this.fail(p, 'parameter entity references are not accepted');
      } else if (input.startsWith('<!--', p)) {
        p = this.comment(p);
      } else if (input.startsWith('<?', p)) {
        p = this.processingInstruction(p);
      } else if (input.startsWith('<!ENTITY', p)) {
        this.fail(p, 'entity declarations are not accepted (external and custom entities are never resolved)');
      } else if (input.startsWith('<!ATTLIST', p)) {
        p = this.markupDeclaration(p, 'attribute default values are not accepted (a parser would add values the gateway never sees)');
      } else if (input.startsWith('<!', p)) {
        p = this.markupDeclaration(p);
      } else {
        this.fail(Number.isNaN(c) ? p - 1 : p, Number.isNaN(c) ? 'DOCTYPE is not closed' : 'invalid DOCTYPE');
      }
    }
  }

  /**
   * `<!ELEMENT …>`, `<!ATTLIST …>`, `<!NOTATION …>`: skipped, quoted literals respected. In an
   * attribute-list declaration the only quoted literals are default values (`"…"`, `#FIXED "…"`),
   * which a parser adds to every element that lacks the attribute: a value the document does not
   * show where it is used, so one the gateway could not protect. `literalRefused` refuses them.
   */
  private markupDeclaration(lt: number, literalRefused?: string): number {
    const input = this.input;
    let p = lt + 2;
    for (;;) {
      const c = input.charCodeAt(p);
      if (c === Ch.Gt) return p + 1;
      if ((c === Ch.Quote || c === Ch.Apos) && literalRefused !== undefined) this.fail(p, literalRefused);
      if (c === Ch.Quote || c === Ch.Apos) p = this.quoted(p);
      else if (c === Ch.Percent) this.fail(p, 'parameter entity references are not accepted');
      else if (c === Ch.Lt || Number.isNaN(c)) this.fail(lt, 'markup declaration is not closed');
      else p++;
    }
  }
}
