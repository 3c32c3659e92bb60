// Generators for the SQL property and real-server tests: a value spelled as a string literal of a
// dialect, each character in one of the escape forms its server decodes; and the shapes a literal can
// take on its way into a protected column.

export const CARD = '4111 1111 1111 1111';
export const EMAIL = 'jane.doe@example.com';
export const NAME = 'Jane Doe';

/** The literal forms the generator writes. */
export const SPELLING_DIALECTS = ['postgresql-E', 'postgresql-U&', 'bigquery', 'snowflake', 'mysql', 'mariadb'] as const;
export type SpellingDialect = (typeof SPELLING_DIALECTS)[number];

export interface Spelling {
  /** The literal as written, quotes and prefix included. */
  readonly text: string;
  readonly prefix: string;
  readonly quote: string;
  /** The codec's dialect name. */
  readonly dialect: string;
}

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');
const oct = (n: number): string => n.toString(8).padStart(3, '0');

function utf8(ch: string): number[] {
  return [...Buffer.from(ch, 'utf8')];
}

function pick<T>(options: readonly T[], choices: Iterator<number>): T {
  const next = choices.next();
  return options[(next.done === true ? 0 : next.value) % options.length];
}

/** The spellings of one character in the literal form. */
function forms(kind: SpellingDialect, ch: string): string[] {
  const cp = ch.codePointAt(0)!;
  const bmp = cp <= 0xffff;
  switch (kind) {
    case 'postgresql-E': {
      const out: string[] = [];
      if (ch === "'") out.push("''", "\\'");
      else if (ch === '\\') out.push('\\\\');
      else out.push(ch);
      const bytes = utf8(ch);
      out.push(bytes.map((b) => '\\x' + hex(b, 2)).join(''), bytes.map((b) => '\\' + oct(b)).join(''));
      if (bmp) out.push('\\u' + hex(cp, 4));
      else {
        const high = 0xd800 + ((cp - 0x10000) >> 10);
        const low = 0xdc00 + ((cp - 0x10000) & 0x3ff);
        out.push('\\u' + hex(high, 4) + '\\u' + hex(low, 4));
      }
      out.push('\\U' + hex(cp, 8));
      return out;
    }
    case 'postgresql-U&': {
      const out = [ch === "'" ? "''" : ch === '\\' ? '\\\\' : ch, '\\+' + hex(cp, 6)];
      if (bmp) out.push('\\' + hex(cp, 4));
      return out;
    }
    case 'bigquery': {
      const out = [ch === "'" ? "\\'" : ch === '\\' ? '\\\\' : ch === '\n' ? '\\n' : ch, '\\U' + hex(cp, 8)];
      if (cp <= 0xff) out.push('\\x' + hex(cp, 2), '\\X' + hex(cp, 2), '\\' + oct(cp));
      if (bmp) out.push('\\u' + hex(cp, 4));
      return out;
    }
    case 'snowflake': {
      const out = ch === "'" ? ["''", "\\'"] : [ch === '\\' ? '\\\\' : ch];
      if (cp <= 0xff) out.push('\\x' + hex(cp, 2));
      // \0 then a digit is refused (NUL or octal?): octal only from \100.
      if (cp >= 0o100 && cp <= 0o377) out.push('\\' + oct(cp));
      if (bmp) out.push('\\u' + hex(cp, 4));
      return out;
    }
    case 'mysql':
    case 'mariadb': {
      const out = ch === "'" ? ["''", "\\'"] : [ch === '\\' ? '\\\\' : ch];
      // A backslash before a character with no escape of its own is dropped.
      if (cp < 0x80 && !'0bnrtZ%_\\\''.includes(ch)) out.push('\\' + ch);
      return out;
    }
  }
}

/** `value` as a literal of `kind`, each character spelled by the next choice. */
export function spell(kind: SpellingDialect, value: string, choices: Iterator<number>): Spelling {
  let body = '';
  for (const ch of value) body += pick(forms(kind, ch), choices);
  const prefix = kind === 'postgresql-E' ? 'E' : kind === 'postgresql-U&' ? 'U&' : '';
  const dialect = kind.startsWith('postgresql') ? 'postgresql' : kind;
  return { text: `${prefix}'${body}'`, prefix, quote: "'", dialect };
}

/**
 * Statements that put `lit` into customers.name (first column) along different paths: VALUES, SELECT
 * lists, aliases, derived tables, star and qualified star, UNION arms, scalar subqueries, expressions.
 * Each is valid SQLite and PostgreSQL; the gateway must protect the literal or refuse the statement.
 */
export const INSERT_SHAPES: readonly ((lit: string) => string)[] = [
  (l) => `INSERT INTO customers (name, id) VALUES (${l}, 1);`,
  (l) => `INSERT INTO customers (name, id) SELECT ${l}, 1;`,
  (l) => `INSERT INTO customers (name, id) SELECT ${l} AS name, 1 AS id;`,
  (l) => `INSERT INTO customers (name, id) SELECT * FROM (SELECT ${l}, 1) t;`,
  (l) => `INSERT INTO customers (name, id) SELECT * FROM (SELECT ${l} AS a, 1 AS b) AS t;`,
  (l) => `INSERT INTO customers (name, id) SELECT a, b FROM (SELECT ${l} AS a, 1 AS b) t;`,
  (l) => `INSERT INTO customers (name, id) SELECT t.* FROM (SELECT ${l} AS a, 1 AS b) t;`,
  (l) => `INSERT INTO customers (name, id) SELECT 'x', 0 UNION ALL SELECT ${l}, 1;`,
  (l) => `INSERT INTO customers (name, id) SELECT * FROM (SELECT 'x', 0 UNION ALL SELECT ${l}, 1) t;`,
  (l) => `INSERT INTO customers (name, id) SELECT (SELECT ${l}), 1;`,
  (l) => `INSERT INTO customers (name, id) VALUES ((SELECT ${l}), 1);`,
  (l) => `INSERT INTO customers (name, id) SELECT * FROM (SELECT * FROM (SELECT ${l}, 1) a) b;`,
  (l) => `INSERT INTO customers (name, id) SELECT x, 1 FROM (SELECT ${l} AS x) t WHERE 1 = 1;`,
  (l) => `INSERT INTO customers (name, id) SELECT UPPER(${l}), 1;`,
  (l) => `INSERT INTO customers (name, id) SELECT ${l} || '', 1;`,
  (l) => `INSERT INTO customers (name, id) SELECT CASE WHEN 1 = 1 THEN ${l} END, 1;`,
  (l) => `INSERT INTO customers (name, id) SELECT * FROM (VALUES (${l}, 1)) v;`,
  (l) => `WITH t AS (SELECT ${l} AS a) INSERT INTO customers (name, id) SELECT a, 1 FROM t;`,
  (l) => `UPDATE customers SET name = (SELECT ${l}) WHERE id = 1;`,
  (l) => `UPDATE customers SET name = ${l} WHERE id = 1;`,
  (l) => `UPDATE customers SET name = t.a FROM (SELECT ${l} AS a) t WHERE customers.id = 1;`,
  (l) => `CREATE TEMP TABLE s (x TEXT);\nINSERT INTO s (x) VALUES (${l});\nINSERT INTO customers (name, id) SELECT x, 1 FROM s;`,
  (l) => `CREATE TEMP TABLE s (x TEXT, n INT);\nINSERT INTO s (x, n) VALUES (${l}, 1);\nINSERT INTO customers (name, id) SELECT * FROM s;`,
];
