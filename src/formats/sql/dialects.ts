// The SQL dialects we accept and what differs between them lexically: which quotes make strings
// and which make identifiers, whether backslash escapes, which comments exist (and whether they
// nest or execute), how to write a string. Each reads the way the dialect's server reads by
// default; where servers of one dialect disagree, the construct is refused (docs/data-types/sql.md).

import { DpgError } from '../../core/errors.ts';

export const SQL_DIALECTS = [
  'mysql',
  'mariadb',
  'postgresql',
  'transactsql',
  'sqlite',
  'bigquery',
  'snowflake',
] as const;
export type SqlDialectName = (typeof SQL_DIALECTS)[number];

export interface SqlDialect {
  readonly name: SqlDialectName;
  /** node-sql-parser's `database` option (and the name of its per-dialect build). */
  readonly parserDatabase: string;
  /** `"…"` is a string literal (MySQL family, BigQuery) rather than a quoted identifier. */
  readonly doubleQuoteIsString: boolean;
  /** Backslash escapes inside ordinary quoted strings. */
  readonly backslashEscapes: boolean;
  /** How a quote inside a string we write is escaped: doubled (`''`) or backslashed (`\'`). */
  readonly quoteEscape: "''" | "\\'";
  readonly backtickIdentifiers: boolean;
  readonly bracketIdentifiers: boolean;
  readonly hashComments: boolean;
  readonly slashSlashComments: boolean;
  /** `$$…$$` strings. */
  readonly dollarStrings: boolean;
  /** Dollar quotes may carry a tag, `$tag$…$tag$` (PostgreSQL); Snowflake has `$$…$$` only. */
  readonly dollarTags: boolean;
  /**
   * `--` starts a comment only when white space or a control character (or the end) follows it
   * (MySQL, MariaDB): `0 --'4111'` is `0 - (-'4111')` there, an expression, not a comment.
   */
  readonly dashCommentNeedsSpace: boolean;
  /**
   * `/* … *\/` inside a block comment: 'nest' (PostgreSQL, T-SQL count the levels), 'flat' (SQLite:
   * the first `*\/` ends it), 'refuse' (servers differ or deprecate nesting: the request is refused).
   */
  readonly nestedComments: 'nest' | 'flat' | 'refuse';
  /** MySQL and MariaDB run the text of `/*! … *\/`, `/*!50001 … *\/` and `/*M! … *\/` as SQL. */
  readonly executableComments: boolean;
  /** `''` inside a string is one quote (false in BigQuery, where it ends the string). */
  readonly doubledQuoteEscape: boolean;
  /**
   * A `"…"` name may be read as a string: SQLite does so when no column has the name, T-SQL when
   * QUOTED_IDENTIFIER is OFF. Bound to a protected column, such a token is refused.
   */
  readonly doubleQuotedNameMayBeString: boolean;
  /** `1abc` is an identifier (MySQL family); elsewhere a number glued to letters is refused. */
  readonly digitLedIdentifiers: boolean;
  /** How a boolean result is written. */
  readonly booleans: readonly [string, string];
}

const base = {
  doubleQuoteIsString: false,
  backslashEscapes: false,
  quoteEscape: "''",
  backtickIdentifiers: false,
  bracketIdentifiers: false,
  hashComments: false,
  slashSlashComments: false,
  dollarStrings: false,
  dollarTags: false,
  dashCommentNeedsSpace: false,
  nestedComments: 'refuse',
  executableComments: false,
  doubledQuoteEscape: true,
  doubleQuotedNameMayBeString: false,
  digitLedIdentifiers: false,
  booleans: ['FALSE', 'TRUE'],
} as const;

const mysqlFamily = {
  ...base,
  doubleQuoteIsString: true,
  backslashEscapes: true,
  backtickIdentifiers: true,
  hashComments: true,
  dashCommentNeedsSpace: true,
  executableComments: true,
  digitLedIdentifiers: true,
} as const;

const dialects: Record<SqlDialectName, SqlDialect> = {
  mysql: { ...mysqlFamily, name: 'mysql', parserDatabase: 'mysql' },
  mariadb: { ...mysqlFamily, name: 'mariadb', parserDatabase: 'mariadb' },
  postgresql: { ...base, name: 'postgresql', parserDatabase: 'postgresql', dollarStrings: true, dollarTags: true, nestedComments: 'nest' },
  transactsql: {
    ...base,
    name: 'transactsql',
    parserDatabase: 'transactsql',
    bracketIdentifiers: true,
    nestedComments: 'nest',
    doubleQuotedNameMayBeString: true,
    booleans: ['0', '1'],
  },
  sqlite: {
    ...base,
    name: 'sqlite',
    parserDatabase: 'sqlite',
    backtickIdentifiers: true,
    bracketIdentifiers: true,
    nestedComments: 'flat',
    doubleQuotedNameMayBeString: true,
  },
  bigquery: {
    ...base,
    name: 'bigquery',
    parserDatabase: 'bigquery',
    doubleQuoteIsString: true,
    backslashEscapes: true,
    quoteEscape: "\\'",
    backtickIdentifiers: true,
    hashComments: true,
    doubledQuoteEscape: false,
  },
  snowflake: {
    ...base,
    name: 'snowflake',
    parserDatabase: 'snowflake',
    backslashEscapes: true,
    slashSlashComments: true,
    dollarStrings: true,
  },
};

/** Other spellings people use for the same dialects. */
const aliases: Record<string, SqlDialectName> = {
  postgres: 'postgresql',
  tsql: 'transactsql',
  mssql: 'transactsql',
  sqlserver: 'transactsql',
};

/** The dialect for a request's `sqlDialect` (default MySQL); unknown names are INVALID_REQUEST. */
export function sqlDialect(name: string | undefined): SqlDialect {
  if (name === undefined || name === '') return dialects.mysql;
  const lower = name.toLowerCase();
  const canonical = Object.hasOwn(dialects, lower) ? (lower as SqlDialectName) : Object.hasOwn(aliases, lower) ? aliases[lower] : undefined;
  if (canonical === undefined) {
    throw new DpgError('INVALID_REQUEST', `Unknown SQL dialect; use one of ${SQL_DIALECTS.join(', ')}`);
  }
  const known = dialects[canonical];
  return known;
}
