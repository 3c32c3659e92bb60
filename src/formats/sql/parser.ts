// node-sql-parser behind one function: loads only the dialect's own grammar, once, and turns its
// errors (which quote the input) into our own MALFORMED_DATA_SET with a position and no content.

import { createRequire } from 'node:module';
import { DpgError } from '../../core/errors.ts';
import type { SqlDialect } from './dialects.ts';
import type { SourcePositions } from './tokenizer.ts';

/** A statement's syntax tree as node-sql-parser returns it; read defensively, shapes vary by dialect. */
export type SqlAst = Record<string, unknown>;

interface ParserInstance {
  astify(sql: string, options: { database: string; parseOptions?: { includeLocations?: boolean } }): unknown;
}

const requireFromHere = createRequire(import.meta.url);
const parsers = new Map<string, ParserInstance>();

function parserFor(dialect: SqlDialect): ParserInstance {
  let parser = parsers.get(dialect.parserDatabase);
  if (parser === undefined) {
    // The per-dialect builds are a tenth of the all-dialect bundle and load in milliseconds.
    const mod = requireFromHere(`node-sql-parser/build/${dialect.parserDatabase}.js`) as {
      Parser: new () => ParserInstance;
    };
    parser = new mod.Parser();
    parsers.set(dialect.parserDatabase, parser);
  }
  return parser;
}

/** Parses a whole script into one tree per statement. Throws MALFORMED_DATA_SET. */
export function parseSqlStatements(sql: string, dialect: SqlDialect, positions: SourcePositions): SqlAst[] {
  let result: unknown;
  try {
    result = parserFor(dialect).astify(sql, { database: dialect.parserDatabase });
  } catch (err) {
    if (err instanceof RangeError) {
      throw new DpgError('MALFORMED_DATA_SET', 'SQL is nested too deeply to parse');
    }
    // The parser reads the text trimmed: its offsets start after the white space (or blanked
    // comments and statements) before the first statement.
    const trimmed = errorOffset(err);
    const offset = trimmed === undefined ? undefined : trimmed + (sql.length - sql.trimStart().length);
    // The parser's own message quotes the input: keep only the position and say it in our words.
    const where = offset === undefined ? '' : ` at ${positions.describe(offset)}`;
    throw new DpgError('MALFORMED_DATA_SET', `SQL does not parse as ${dialect.name}${where}: syntax error or unsupported construct`);
  }
  const list = Array.isArray(result) ? result : [result];
  return list.filter((a): a is SqlAst => a !== null && typeof a === 'object');
}

function errorOffset(err: unknown): number | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  const location = (err as { location?: { start?: { offset?: unknown } } }).location;
  const offset = location?.start?.offset;
  return typeof offset === 'number' ? offset : undefined;
}
