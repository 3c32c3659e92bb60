// The boundary between data types and the engine. A codec knows how to find fields in its data type
// and how to write a value back without disturbing anything else; it knows nothing of techniques,
// keys or manifests. The engine hands it a FieldResolver bound to one request.

import type { DataSetType, Scalar } from '../core/types.ts';

/**
 * What happens to one field, bound to a request (context, keys, options already applied).
 * Obtained from FieldResolver.resolve; the same object is returned for the same name/path, so
 * codecs may cache it per column or per key.
 */
export interface FieldAction {
  /**
   * True when the field (JSON key, XML element or attribute, SQL column and its value) is removed
   * from the output for this value (Restrict). A codec asks before `apply`. `value` may be a
   * container (a JSON object under a matched key): only null/empty values can escape removal.
   * Also true, always, for a field whose own name is personal data the manifest detects (a JSON key
   * that is an e-mail address, a CSV header that is a card number): names are never rewritten, so
   * the field goes, name and value, and the engine records it at `location` (given where the codec
   * has one; the name itself is withheld from it).
   */
  removes(value: unknown, location?: string | (() => string)): boolean;
  /**
   * The protected value. Never throws for a bad value: the engine records the failure (location and
   * reason only) and returns a stand-in, so codecs can run straight through. `location` is a path,
   * row/column or line:column — never the value — and may be a thunk when building it costs.
   * The result may change type (a number masked to a string); codecs write it in their own syntax.
   */
  apply(value: Scalar, location: string | (() => string)): Scalar;
  /** The same for many values at once (a column): lets batched ciphers (FF1) do one pass. */
  applyBatch(values: Scalar[], location: (index: number) => string): Scalar[];
  /**
   * For one value that readers may see whole or in pieces (XML text split by comments, processing
   * instructions or CDATA sections: a DOM or SAX reader sees each piece, ElementTree the joined
   * text): values are looked for in each piece alone and in the joined text, and the pieces come
   * back in the same number, each to be written back in its own place. A value found across a
   * boundary is protected whole and written where it starts; its characters leave the pieces
   * after. Only the content-detection action has it; for other actions a codec applies `apply` to
   * the joined value, writes the result into the first piece and empties the others.
   */
  applyPieces?(pieces: readonly string[], location: string | (() => string)): string[];
  /**
   * Where this action finds values in a text, as [start, end) offsets, without protecting anything.
   * Only the content-detection action has it: a codec asks it whether a value the server joins from
   * pieces holds data no single piece holds (the answer must not depend on randomised output).
   */
  detectedSpans?(text: string): readonly (readonly [number, number])[];
  /**
   * True for the action the engine gives fields no selector claims when the manifest detects by
   * content (cards, emails, phones… found in whole values and inside text). Beneath a matched
   * field (a JSON object under a matched key, an XML element inside a matched one) a codec keeps
   * the matched field's action instead: a matched ancestor covers everything beneath it.
   */
  readonly byContent?: boolean;
}

/**
 * Finds the action for a field. `name` is the field's own name as it appears (JSON key, XML local
 * name, SQL column, CSV header); `path` is its exact path in the data type's path syntax
 * (see docs/manifests.md): `$.customer.email` for JSON, `/Envelope/Body/card/@id` for XML,
 * `table.column` for SQL, the header for LIST. Returns undefined for fields left alone.
 */
export interface FieldResolver {
  resolve(name: string, path?: string): FieldAction | undefined;
  /** false when no selector of the plan uses an exact path: codecs can skip building paths. */
  readonly usesPaths: boolean;
  /**
   * The content-detection action for values that belong to no named field (a JSON document's root
   * scalars, SQL literals bound to no column); undefined when the manifest detects nothing.
   */
  contentAction?(): FieldAction | undefined;
}

/**
 * The action for a field beneath an ancestor's action: the field's own rule wins, except the
 * content-detection action, which never replaces a matched ancestor's rule.
 */
export function innerAction(own: FieldAction | undefined, inherited: FieldAction | undefined): FieldAction | undefined {
  if (own === undefined) return inherited;
  return own.byContent === true && inherited !== undefined ? inherited : own;
}

/** Options a codec needs from the request. */
export interface CodecOptions {
  /** SQL dialect (mysql, mariadb, postgresql, transactsql, sqlite, bigquery, snowflake). */
  readonly sqlDialect?: string;
  /** LIST: the delimiter; detected from the header line when absent. */
  readonly listDelimiter?: string;
  /** LIST without `listDelimiter`: a header holding more than one candidate delimiter is refused. */
  readonly listRequireCertainDelimiter?: boolean;
}

/**
 * A codec protecting whole documents held in memory. Input is text, except for JSON where the
 * doors may pass an already parsed value (the /api/protect body). Throws DpgError
 * MALFORMED_DATA_SET (with a position, never content) on input that does not parse, before any
 * output exists.
 */
export interface DocumentCodec {
  readonly type: DataSetType;
  protect(input: string | unknown, resolver: FieldResolver, options: CodecOptions): string | unknown;
}

/**
 * A protected document laid out as one table for the CSV output of /file/protect (DESIGN §4):
 * columns are dotted paths (JSON), element/attribute paths (XML) or column names (SQL), in
 * first-seen order; a missing cell is the empty string.
 */
export interface FlatTable {
  readonly columns: readonly string[];
  readonly rows: Iterable<readonly string[]>;
}

/** Turns a protected document of one data type into a FlatTable. */
export type Flattener = (protectedDocument: string | unknown, options: CodecOptions) => FlatTable;
