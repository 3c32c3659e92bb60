// The encoding an XML document declares for itself. libxml2 (lxml, PHP DOM/SimpleXML, Nokogiri)
// and other parsers decode the bytes by that declaration, so a document declaring an encoding the
// gateway does not decode (`encoding="UTF-7"`) would be read by the upstream as another text than
// the one the gateway protected. Readers refuse such documents (issue 16, class 1).

/** What a document's XML declaration says about its encoding. */
export type DeclaredEncoding =
  /** No XML declaration, or one without `encoding`. */
  | { readonly kind: 'none' }
  /** `encoding="…"`, lower case. */
  | { readonly kind: 'named'; readonly name: string }
  /** A declaration mentioning `encoding` in a form we do not read one way (unquoted, twice, out of order). */
  | { readonly kind: 'unreadable' };

const DECLARATION =
  /^<\?xml[ \t\r\n]+version[ \t\r\n]*=[ \t\r\n]*(["'])1\.[0-9]+\1(?:[ \t\r\n]+encoding[ \t\r\n]*=[ \t\r\n]*(["'])([A-Za-z][A-Za-z0-9._-]*)\2)?(?:[ \t\r\n]+standalone[ \t\r\n]*=[ \t\r\n]*(["'])(?:yes|no)\4)?[ \t\r\n]*\?>$/;

/**
 * The declared encoding of `text` (already decoded). A byte order mark and, unlike XML 1.0,
 * leading whitespace are skipped: a lenient reader may still take what follows as the declaration.
 */
export function declaredEncoding(text: string): DeclaredEncoding {
  let pos = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  while (pos < text.length && /[ \t\r\n]/.test(text[pos])) pos++;
  if (!text.startsWith('<?xml', pos) || !/[ \t\r\n]/.test(text.charAt(pos + 5))) return { kind: 'none' };
  const end = text.indexOf('?>', pos + 5);
  const declaration = end === -1 ? text.slice(pos, pos + 512) : text.slice(pos, end + 2);
  const m = end === -1 ? null : DECLARATION.exec(declaration);
  if (m === null) return /encoding/i.test(declaration) ? { kind: 'unreadable' } : { kind: 'none' };
  return m[3] === undefined ? { kind: 'none' } : { kind: 'named', name: m[3].toLowerCase() };
}

/** Names of UTF-8 and of US-ASCII (its subset) as declarations and charset parameters spell them. */
export const UTF8_NAMES: ReadonlySet<string> = new Set(['utf-8', 'utf8']);
export const ASCII_NAMES: ReadonlySet<string> = new Set(['us-ascii', 'ascii']);
export const UTF16_NAMES: ReadonlySet<string> = new Set(['utf-16', 'utf-16le', 'utf-16be']);

/**
 * Why a document held as text (its bytes already decoded as UTF-8 or UTF-16) cannot be protected
 * for what it declares; undefined when it can. Only UTF-8, US-ASCII (when every character is ASCII)
 * and UTF-16 are read; whether a UTF-16 declaration matches the bytes is for the caller who has
 * the bytes (src/proxy/reading/body-charset.ts).
 */
export function unsupportedDeclaration(text: string): string | undefined {
  const declared = declaredEncoding(text);
  if (declared.kind === 'none') return undefined;
  if (declared.kind === 'unreadable') return 'The XML declaration names an encoding in a form that cannot be read one way';
  const name = declared.name;
  if (UTF8_NAMES.has(name) || UTF16_NAMES.has(name)) return undefined;
  if (ASCII_NAMES.has(name)) return /[^\x00-\x7f]/.test(text) ? 'The XML declaration says US-ASCII but the document holds other characters' : undefined;
  return 'The XML declaration names an encoding other than UTF-8, US-ASCII or UTF-16';
}
