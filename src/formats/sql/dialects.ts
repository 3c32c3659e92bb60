// The SQL dialects we accept and what differs between them lexically: which quotes make strings
// and which make identifiers, whether backslash escapes, which comments exist, how to write a string.

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
  /** `$$…$$` / `$tag$…$tag$` strings. */
  readonly dollarStrings: boolean;
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
  booleans: ['FALSE', 'TRUE'],
} as const;

const mysqlFamily = {
  ...base,
  doubleQuoteIsString: true,
  backslashEscapes: true,
  backtickIdentifiers: true,
  hashComments: true,
} as const;

const dialects: Record<SqlDialectName, SqlDialect> = {
  mysql: { ...mysqlFamily, name: 'mysql', parserDatabase: 'mysql' },
  mariadb: { ...mysqlFamily, name: 'mariadb', parserDatabase: 'mariadb' },
  postgresql: { ...base, name: 'postgresql', parserDatabase: 'postgresql', dollarStrings: true },
  transactsql: {
    ...base,
    name: 'transactsql',
    parserDatabase: 'transactsql',
    bracketIdentifiers: true,
    booleans: ['0', '1'],
  },
  sqlite: { ...base, name: 'sqlite', parserDatabase: 'sqlite', backtickIdentifiers: true, bracketIdentifiers: true },
  bigquery: {
    ...base,
    name: 'bigquery',
    parserDatabase: 'bigquery',
    doubleQuoteIsString: true,
    backslashEscapes: true,
    quoteEscape: "\\'",
    backtickIdentifiers: true,
    hashComments: true,
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
