// Issue 16, classes 4 and 5: every escape form of a dialect is decoded before protection (and the
// protected value is written back in the same form), and every path that carries a literal into a
// protected column is protected or refused. Property tests generate the spellings and the shapes.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DpgError } from '../../../src/core/errors.ts';
import type { Scalar } from '../../../src/core/types.ts';
import type { FieldAction, FieldResolver } from '../../../src/formats/codec.ts';
import { protectSql } from '../../../src/formats/sql/index.ts';
import { CARD, EMAIL, INSERT_SHAPES, NAME, spell, SPELLING_DIALECTS, type Spelling } from './spellings.ts';

function action(fn: (v: Scalar) => Scalar, removes: (v: Scalar) => boolean = () => false): FieldAction {
  return { removes, apply: (v) => fn(v), applyBatch: (vs) => vs.map((v) => fn(v)) };
}
const reverse = action((v) => (typeof v === 'string' ? [...v].reverse().join('') : v));
const star = action((v) => (v === null ? null : String(v).replace(/[^ @]/g, '*')));

function resolverOf(map: Record<string, FieldAction>, content?: FieldAction): FieldResolver {
  return {
    usesPaths: false,
    resolve: (name) => map[name.toLowerCase()],
    contentAction: content === undefined ? undefined : () => content,
  };
}

/** A resolver that records what the protected column's action is given. */
function recorder(): { resolver: FieldResolver; seen: Scalar[] } {
  const seen: Scalar[] = [];
  return { resolver: resolverOf({ name: action((v) => (seen.push(v), v)) }), seen };
}

function refused(sql: string, dialect: string, reason?: RegExp, resolver: FieldResolver = resolverOf({ name: star })): DpgError {
  try {
    protectSql(sql, resolver, { sqlDialect: dialect });
  } catch (err) {
    assert.ok(err instanceof DpgError, String(err));
    assert.equal(err.code, 'MALFORMED_DATA_SET', err.message);
    if (reason) assert.match(err.message, reason);
    for (const clear of [NAME, CARD, EMAIL, 'Jane']) assert.ok(!err.message.includes(clear), `message leaks a value: ${err.message}`);
    return err;
  }
  assert.fail(`expected a refusal for ${dialect}: ${sql}`);
}

describe('class 4: string literals are decoded with every escape form of their dialect', () => {
  const cases: [string, string, string][] = [
    // PostgreSQL E'…': byte escapes build UTF-8, one- and two-digit forms, octal separators, \u and \U.
    ['postgresql', String.raw`E'card \x34111 1111 1111 1111'`, `card ${CARD}`],
    ['postgresql', String.raw`E'jane.doe\x40example.com'`, EMAIL],
    ['postgresql', String.raw`E'4111\0401111\40\061111\0401111'`, CARD],
    ['postgresql', String.raw`E'\x4a\x61ne\x9 Doe'`, 'Jane\t Doe'],
    ['postgresql', String.raw`E'\u004Aane \U00000044oe \xC3\xA9 \uD83D\uDE00'`, 'Jane Doe é 😀'],
    ['postgresql', String.raw`E'it\'s ''ok'' \q\\'`, "it's 'ok' q\\"],
    ['postgresql', String.raw`U&'J\0061ne \+000044oe \\ it''s'`, "Jane Doe \\ it's"],
    ['postgresql', String.raw`'plain \x41 stays'`, String.raw`plain \x41 stays`],
    // BigQuery: numeric escapes are code points; "…" strings too.
    ['bigquery', String.raw`'\u0034111 \x31\X31\0611 \U0000004a'`, '4111 1111 J'],
    ['bigquery', String.raw`"a\'b\"c\?\a"`, 'a\'b"c?\x07'],
    ['bigquery', String.raw`r'\x41'`, String.raw`\x41`],
    // Snowflake: \ooo, \xhh, \uhhhh; any other escaped character stands for itself.
    ['snowflake', String.raw`'\u0034\x31\x31\x31 \112\a\n'`, '4111 Ja\n'],
    // MySQL and MariaDB have no numeric escapes: \x41 is x41; \% keeps its backslash.
    ['mysql', String.raw`'\x41\J\0\Z\%'`, 'x41J\0\x1a\\%'],
    ['mariadb', String.raw`"say \"hi\" ""twice"""`, 'say "hi" "twice"'],
    // T-SQL and SQLite have no backslash escapes at all.
    ['transactsql', String.raw`N'\x41 it''s'`, String.raw`\x41 it's`],
    ['sqlite', String.raw`'\u0041'`, String.raw`\u0041`],
  ];
  for (const [dialect, literal, value] of cases) {
    it(`${dialect}: ${literal} is read as the server stores it`, () => {
      const { resolver, seen } = recorder();
      protectSql(`INSERT INTO customers (name) VALUES (${literal});`, resolver, { sqlDialect: dialect });
      assert.deepEqual(seen, [value]);
    });
  }

  it('detection sees the decoded value: a card spelled with escapes in an unclaimed column is found', () => {
    const seen: Scalar[] = [];
    const content = action((v) => (seen.push(v), typeof v === 'string' ? v.replaceAll(CARD, 'XXXX') : v));
    const out = protectSql(String.raw`INSERT INTO t (note) VALUES (E'pay \x34111\0401111 1111 1111 now');`, resolverOf({}, content), { sqlDialect: 'postgresql' });
    assert.ok(seen.includes(`pay ${CARD} now`));
    assert.equal(out, `INSERT INTO t (note) VALUES (E'pay XXXX now');`);
  });

  it('the protected value is written back in the literal form of the original', () => {
    const r = resolverOf({ name: reverse });
    const pg = (sql: string) => protectSql(sql, r, { sqlDialect: 'postgresql' });
    assert.equal(pg(String.raw`INSERT INTO c (name) VALUES (E'a\\b\x27c')`), String.raw`INSERT INTO c (name) VALUES (E'c''b\\a')`);
    assert.equal(pg(String.raw`INSERT INTO c (name) VALUES (E'a\'b')`), String.raw`INSERT INTO c (name) VALUES (E'b\'a')`);
    assert.equal(pg(String.raw`INSERT INTO c (name) VALUES (U&'\0041''\\')`), String.raw`INSERT INTO c (name) VALUES (U&'\\''A')`);
    assert.equal(protectSql(String.raw`INSERT INTO c (name) VALUES ('\u0041\n')`, r, { sqlDialect: 'bigquery' }), String.raw`INSERT INTO c (name) VALUES ('\nA')`);
    assert.equal(protectSql(String.raw`INSERT INTO c (name) VALUES ('\x41\\')`, r, { sqlDialect: 'snowflake' }), String.raw`INSERT INTO c (name) VALUES ('\\A')`);
  });

  it('an escape that cannot be read with certainty is refused, naming no value', () => {
    const pg = (literal: string, why: RegExp) => refused(`INSERT INTO customers (name) VALUES (${literal});`, 'postgresql', why);
    pg(String.raw`E'Jane\x00Doe'`, /NUL/);
    pg(String.raw`E'Jane\000Doe'`, /octal/);
    pg(String.raw`E'Jane\777'`, /octal/);
    pg(String.raw`E'4111\401111'`, /octal/); // \401 is 257: the server keeps its low byte
    pg(String.raw`E'Jane\x9Doe'`, /UTF-8/); // \x9D, not \x9 then D
    pg(String.raw`E'Jane\xff'`, /UTF-8/);
    pg(String.raw`E'Jane\u12'`, /Unicode escape/);
    pg(String.raw`E'Jane\uD800'`, /no Unicode character/);
    pg(String.raw`U&'Jane\q'`, /Unicode escape/);
    pg(String.raw`U&'J\0061ne' UESCAPE '!'`, /UESCAPE/);
    refused(`INSERT INTO customers (U&"n\\0061me") VALUES ('Jane');`, 'postgresql', /U&"…" names/);
    refused(String.raw`INSERT INTO customers (name) VALUES ('Jane\q');`, 'bigquery', /BigQuery does not define/);
    refused(String.raw`INSERT INTO customers (name) VALUES ('\x4');`, 'bigquery', /exactly 2 hex digits/);
    refused(String.raw`INSERT INTO customers (name) VALUES ('\41');`, 'bigquery', /three digits/);
    refused(String.raw`INSERT INTO customers (name) VALUES ('\012x');`, 'snowflake', /either as NUL or as an octal/);
    refused(String.raw`INSERT INTO customers (name) VALUES ('\41x');`, 'snowflake', /three octal digits/);
    refused(String.raw`INSERT INTO customers (name) VALUES ('\U00000041');`, 'snowflake', /not documented/);
  });

  it('two string literals in a row are refused: servers join them (PostgreSQL across a line break, keeping E escapes)', () => {
    refused(`INSERT INTO customers (name) VALUES ('Jane' ' Doe');`, 'mysql', /two string literals/);
    refused(`INSERT INTO customers (name) VALUES (E'Jane'\n'\\x20Doe');`, 'postgresql', /two string literals/);
    refused(`INSERT INTO t (note) VALUES ('4111 1111'\n' 1111 1111');`, 'postgresql', /two string literals/, resolverOf({}));
  });

  it('a card split across literals the server joins is refused; a card whole in one piece is protected in it', () => {
    const cardFinder = action((v) => (typeof v === 'string' ? v.replaceAll(CARD, 'XXXX') : v));
    const r = resolverOf({}, cardFinder);
    refused(`INSERT INTO t (note) VALUES ('4111 1111' || ' 1111 1111');`, 'postgresql', /joins literals/, r);
    refused(`INSERT INTO t (note) VALUES (N'4111 1111' + N' 1111 1111');`, 'transactsql', /joins literals/, r);
    refused(`INSERT INTO t (note) VALUES (CONCAT('4111 ', '1111 1111', ' 1111'));`, 'mysql', /joins literals/, r);
    refused(`INSERT INTO t (note) VALUES (CONCAT_WS(' ', '4111', '1111', '1111', '1111'));`, 'mariadb', /joins literals/, r);
    refused(String.raw`INSERT INTO t (note) VALUES (E'4111 1111' || ' 1111 1111');`, 'postgresql', /joins literals/, r);
    assert.equal(
      protectSql(`INSERT INTO t (note) VALUES ('card ${CARD}' || ' ok');`, r, { sqlDialect: 'sqlite' }),
      `INSERT INTO t (note) VALUES ('card XXXX' || ' ok');`,
    );
  });

  it('binary literals are refused for protected columns and when their bytes hold detected data', () => {
    refused(`INSERT INTO customers (name) VALUES (0x4A616E6520446F65);`, 'mysql', /binary literal/);
    refused(`INSERT INTO customers (name) VALUES (X'4A616E65');`, 'sqlite', /binary literal/);
    refused(`INSERT INTO customers (name) VALUES (0b0100101001100001);`, 'mysql', /binary literal/);
    refused(`INSERT INTO customers (name) VALUES (b'01001010');`, 'mariadb', /binary literal/);
    refused(`INSERT INTO customers (name) VALUES (0x4A00610000);`, 'transactsql', /binary literal/);
    const cardFinder = action((v) => (typeof v === 'string' ? v.replaceAll(CARD, 'XXXX') : v));
    const hex = Buffer.from(CARD).toString('hex');
    const utf16 = Buffer.from(CARD, 'utf16le').toString('hex');
    refused(`INSERT INTO t (note) VALUES (X'${hex}');`, 'sqlite', /detected data/, resolverOf({}, cardFinder));
    refused(`INSERT INTO t (note) VALUES (0x${hex});`, 'mysql', /detected data/, resolverOf({}, cardFinder));
    refused(`INSERT INTO t (note) VALUES (0x${utf16});`, 'transactsql', /detected data/, resolverOf({}, cardFinder));
    // 0x… is an integer in SQLite (and PostgreSQL 16, BigQuery): read as its decimal value.
    const hexCard = '0x' + (4111111111111111).toString(16);
    const numberFinder = action((v) => (v === 4111111111111111 ? 'XXXX' : v));
    assert.equal(protectSql(`INSERT INTO t (n) VALUES (${hexCard});`, resolverOf({}, numberFinder), { sqlDialect: 'sqlite' }), `INSERT INTO t (n) VALUES ('XXXX');`);
    // Bytes without detected data pass untouched.
    const blob = `INSERT INTO t (note) VALUES (X'00ff10');`;
    assert.equal(protectSql(blob, resolverOf({}, cardFinder), { sqlDialect: 'sqlite' }), blob);
  });

  for (const dialect of SPELLING_DIALECTS) {
    it(`property (${dialect}): any escape spelling of a card, an email or a name is read as the value, and written back in the same form`, () => {
      fc.assert(
        fc.property(
          fc.constantFrom(CARD, EMAIL, NAME, 'Zoë Ünal', "O'Neil \\ 😀"),
          fc.infiniteStream(fc.nat()),
          (value, choices) => {
            const lit: Spelling = spell(dialect, value, choices);
            const { resolver, seen } = recorder();
            const sql = `INSERT INTO customers (name) VALUES (${lit.text});`;
            protectSql(sql, resolver, { sqlDialect: lit.dialect });
            assert.deepEqual(seen, [value]);
            // Written back with the reversing action, the literal keeps its prefix and reads as the reversed value.
            const out = protectSql(sql, resolverOf({ name: reverse }), { sqlDialect: lit.dialect });
            const written = out.slice('INSERT INTO customers (name) VALUES ('.length, -2);
            assert.ok(written.startsWith(lit.prefix + lit.quote), `${written} keeps ${lit.prefix}`);
            const again = recorder();
            protectSql(out, again.resolver, { sqlDialect: lit.dialect });
            assert.deepEqual(again.seen, [[...value].reverse().join('')]);
          },
        ),
        { numRuns: 150 },
      );
    });
  }
});

describe('class 5: literals reaching a protected column along any path are protected or refused', () => {
  const masked = (sql: string, dialect: string) => protectSql(sql, resolverOf({ name: star }), { sqlDialect: dialect });

  it('literals the INSERT binds directly are protected in place: SELECT lists, UNION arms, parenthesised queries', () => {
    assert.equal(masked(`INSERT INTO customers (name) SELECT 'Jane Doe';`, 'sqlite'), `INSERT INTO customers (name) SELECT '**** ***';`);
    assert.equal(
      masked(`INSERT INTO customers (name) SELECT 'Jane' UNION ALL SELECT 'Joe';`, 'sqlite'),
      `INSERT INTO customers (name) SELECT '****' UNION ALL SELECT '***';`,
    );
    assert.equal(masked(`INSERT INTO customers (name) (SELECT 'Jane Doe');`, 'postgresql'), `INSERT INTO customers (name) (SELECT '**** ***');`);
    assert.equal(masked(`INSERT INTO customers (name) ((SELECT 'Jane Doe'));`, 'postgresql'), `INSERT INTO customers (name) ((SELECT '**** ***'));`);
    assert.equal(
      masked(`INSERT INTO customers (name) (SELECT 'Jane') UNION (SELECT 'Joe');`, 'postgresql'),
      `INSERT INTO customers (name) (SELECT '****') UNION (SELECT '***');`,
    );
  });

  it('literals reaching it through derived tables, WITH queries, VALUES lists and table functions are refused', () => {
    refused(`INSERT INTO customers (name) SELECT * FROM (SELECT 'Jane Doe') t;`, 'sqlite', /unnamed query output/);
    refused(`INSERT INTO customers (name) SELECT * FROM (SELECT 'Jane Doe') t;`, 'mysql', /unnamed query output/);
    refused(`REPLACE INTO customers (name) SELECT * FROM (SELECT 'Jane Doe') t;`, 'mysql');
    refused(`INSERT INTO customers (name) SELECT x FROM (SELECT 'Jane Doe' AS x) t;`, 'postgresql', /column x/);
    refused(`INSERT INTO customers (name) SELECT a FROM (SELECT 'Jane Doe') AS t(a);`, 'postgresql');
    refused(`INSERT INTO customers (name) WITH t AS (SELECT 'Jane Doe') SELECT * FROM t;`, 'mysql', /WITH query/);
    refused(`INSERT INTO customers (name) (WITH t AS (SELECT 'Jane Doe' AS a) SELECT a FROM t);`, 'postgresql', /WITH query/);
    refused(`INSERT INTO customers (name) SELECT * FROM (VALUES ('Jane Doe')) v;`, 'postgresql');
    refused(`INSERT INTO customers (name) SELECT * FROM unnest(ARRAY['Jane Doe']);`, 'postgresql', /table function/);
    refused(`INSERT INTO customers (name) SELECT * FROM (SELECT 'Jane' UNION SELECT 'Joe') t;`, 'sqlite');
    refused(`INSERT INTO customers (name) SELECT 'Jane' UNION (SELECT 'Joe');`, 'postgresql', /could not be read reliably/);
    refused(`UPDATE customers SET name = (SELECT 'Jane Doe');`, 'postgresql', /expression/);
    refused(`UPDATE customers SET name = t.n FROM (SELECT 'Jane Doe' AS n) t;`, 'postgresql', /column n/);
    refused(`UPDATE customers c JOIN (SELECT 'Jane Doe' AS n) t SET c.name = t.n;`, 'mysql', /column n/);
    refused(`INSERT INTO customers (name) VALUES ((SELECT 'Jane Doe'));`, 'sqlite', /expression/);
    refused(`INSERT INTO customers (name) SELECT x FROM (SELECT @n AS x) t;`, 'mysql');
  });

  it('what carries no literal into a protected column still passes untouched', () => {
    for (const [sql, dialect] of [
      [`INSERT INTO customers (name) SELECT name FROM staging WHERE id = 1;`, 'postgresql'],
      [`INSERT INTO customers (name, note) SELECT s.name, 'imported' FROM staging s;`, 'postgresql'],
      [`INSERT INTO customers (name) SELECT * FROM staging;`, 'sqlite'],
      [`INSERT INTO log (note) SELECT * FROM (SELECT 'done') t;`, 'sqlite'],
      [`SET @n = 'Jane Doe'; INSERT INTO log (note) VALUES (@n);`, 'mysql'],
    ] as const) {
      assert.equal(masked(sql, dialect), sql);
    }
  });

  it('a variable used for a protected column is protected at every assignment in the script', () => {
    assert.equal(
      masked(`SET @n = 'Jane Doe'; INSERT INTO customers (name) VALUES (@n);`, 'mysql'),
      `SET @n = '**** ***'; INSERT INTO customers (name) VALUES (@n);`,
    );
    assert.equal(
      masked(`SET @a = 1, @n := 'Jane'; SET @m = @n; UPDATE customers SET name = @M WHERE id = 1;`, 'mariadb'),
      `SET @a = 1, @n := '****'; SET @m = @n; UPDATE customers SET name = @M WHERE id = 1;`,
    );
    assert.equal(
      masked(`SET @n = 'Jane'; SELECT * FROM customers WHERE name = @n OR @n = name;`, 'mysql'),
      `SET @n = '****'; SELECT * FROM customers WHERE name = @n OR @n = name;`,
    );
    assert.equal(
      masked(`DECLARE @id INT = 1, @n NVARCHAR(50) = N'Jane Doe';\nSELECT @n = N'Joe';\nINSERT INTO customers (name) VALUES (@n);`, 'transactsql'),
      `DECLARE @id INT = 1, @n NVARCHAR(50) = N'**** ***';\nSELECT @n = N'***';\nINSERT INTO customers (name) VALUES (@n);`,
    );
    assert.equal(
      masked(`SET n = 'Jane Doe'; INSERT INTO customers (name) VALUES ($N);`, 'snowflake'),
      `SET n = '**** ***'; INSERT INTO customers (name) VALUES ($N);`,
    );
    assert.equal(masked(`SET @n = 'Jane'; INSERT INTO customers (name) SELECT @n;`, 'mysql'), `SET @n = '****'; INSERT INTO customers (name) SELECT @n;`);
  });

  it('a variable whose value cannot be protected where it is set is refused', () => {
    refused(`INSERT INTO customers (name) VALUES (@n);`, 'mysql', /not assigned in this script/);
    refused(`SELECT 'Jane Doe' INTO @n; INSERT INTO customers (name) VALUES (@n);`, 'mysql', /filled by a query that carries literals/);
    refused(`SELECT name FROM staging WHERE id = 1 INTO @n; INSERT INTO customers (name) VALUES (@n);`, 'mysql', /carries literals/);
    refused(`SET @n = 'Jane Doe'; SELECT @n INTO @m; INSERT INTO customers (name) VALUES (@m);`, 'mysql', /variable m/);
    refused(`DECLARE @n NVARCHAR(50); FETCH NEXT FROM c INTO @n; INSERT INTO customers (name) VALUES (@n);`, 'transactsql', /cursor/);
    // A variable a query fills from a column passes when the query carries no literal; with one (a derived table), it is refused.
    const fromColumn = `DECLARE @n NVARCHAR(50); SELECT @n = name FROM staging; INSERT INTO customers (name) VALUES (@n);`;
    assert.equal(masked(fromColumn, 'transactsql'), fromColumn);
    refused(`DECLARE @n NVARCHAR(50); SELECT @n = x FROM (SELECT N'Jane Doe' AS x) t; INSERT INTO customers (name) VALUES (@n);`, 'transactsql', /variable n/);
    refused(`SELECT @n := x FROM (SELECT 'Jane Doe' AS x) t; INSERT INTO customers (name) VALUES (@n);`, 'mysql', /variable n/);
    refused(`SET @n = CONCAT('Jane', ' Doe'); INSERT INTO customers (name) VALUES (@n);`, 'mysql', /expression holding literals/);
    refused(`SET @a = 'Ja', @b = 'ne'; INSERT INTO customers (name) VALUES (CONCAT(@a, @b));`, 'mysql', /several variables/);
    refused(`INSERT INTO customers (name) VALUES ($n);`, 'snowflake', /not assigned/);
    refused(`SET n = 'Jane Doe'; INSERT INTO customers (name) VALUES (n);`, 'bigquery', /BigQuery script variable/);
    refused(`DECLARE @n NVARCHAR(50); SET @n += N'Jane'; INSERT INTO customers (name) VALUES (@n);`, 'transactsql');
  });

  it('a literal written to a column the same script copies into a protected column is refused, through chains of copies', () => {
    refused(`INSERT INTO staging (x) VALUES ('Jane Doe');\nINSERT INTO customers (name) SELECT x FROM staging;`, 'sqlite', /copies into a protected column/);
    refused(`INSERT INTO customers (name) SELECT x FROM staging;\nINSERT INTO staging (x, y) VALUES ('Jane Doe', 1);`, 'sqlite', /column x/);
    refused(`INSERT INTO staging (x) VALUES ('Jane Doe');\nINSERT INTO customers (name) SELECT * FROM staging;`, 'sqlite', /copies into a protected column/);
    refused(`UPDATE staging SET x = 'Jane Doe';\nUPDATE customers SET name = s.x FROM staging s WHERE s.id = customers.id;`, 'postgresql', /copies into a protected column/);
    refused(
      `INSERT INTO s1 (x) VALUES ('Jane Doe');\nINSERT INTO s2 (y) SELECT x FROM s1;\nINSERT INTO customers (name) SELECT y FROM s2;`,
      'sqlite',
      /column x/,
    );
    refused(`SET @n = 'Jane Doe'; INSERT INTO staging (x) VALUES (@n); INSERT INTO customers (name) SELECT x FROM staging;`, 'mysql', /copies into a protected column/);
    refused(`CREATE TABLE s AS SELECT 'Jane Doe';\nINSERT INTO customers (name) SELECT * FROM s;`, 'sqlite', /table s/);
    refused(`SELECT 'Jane Doe' AS x INTO s;\nINSERT INTO customers (name) SELECT x FROM s;`, 'postgresql', /column x/);
    refused(`INSERT INTO s (x) SELECT * FROM (SELECT 'Jane Doe') t;\nINSERT INTO customers (name) SELECT * FROM s;`, 'sqlite', /table s/);
        // Columns nothing copies into a protected one stay free; a column compared with one is not copied into it.
    const ok = `INSERT INTO customers (name, note) SELECT name, note FROM staging;\nINSERT INTO audit (note) VALUES ('imported');\nINSERT INTO staging (other) VALUES ('x');`;
    assert.equal(masked(ok, 'sqlite'), ok);
    const compared = `SELECT * FROM customers c JOIN orders o ON c.name = o.buyer;\nINSERT INTO orders (buyer) VALUES ('someone');`;
    assert.equal(masked(compared, 'sqlite'), compared);
  });

  it('a column default (stored in every row that does not name the column) is protected like a value', () => {
    assert.equal(
      masked(`CREATE TABLE customers (id INT DEFAULT 0, name TEXT NOT NULL DEFAULT 'Jane Doe', note TEXT DEFAULT 'x');`, 'sqlite'),
      `CREATE TABLE customers (id INT DEFAULT 0, name TEXT NOT NULL DEFAULT '**** ***', note TEXT DEFAULT 'x');`,
    );
    assert.equal(masked(`ALTER TABLE customers ALTER COLUMN name SET DEFAULT 'Jane Doe';`, 'postgresql'), `ALTER TABLE customers ALTER COLUMN name SET DEFAULT '**** ***';`);
    assert.equal(masked(`ALTER TABLE customers ADD COLUMN name VARCHAR(20) DEFAULT 'Jane Doe';`, 'mysql'), `ALTER TABLE customers ADD COLUMN name VARCHAR(20) DEFAULT '**** ***';`);
    assert.equal(masked(`ALTER TABLE customers CHANGE old name VARCHAR(20) DEFAULT 'Jane';`, 'mysql'), `ALTER TABLE customers CHANGE old name VARCHAR(20) DEFAULT '****';`);
    assert.equal(
      masked(`ALTER TABLE customers ADD CONSTRAINT df_name DEFAULT N'Jane Doe' FOR name;`, 'transactsql'),
      `ALTER TABLE customers ADD CONSTRAINT df_name DEFAULT N'**** ***' FOR name;`,
    );
    refused(`ALTER TABLE customers ALTER COLUMN name SET DEFAULT 'Jane' || ' Doe';`, 'postgresql', /expression/);
    const plain = `CREATE TABLE t (id INT DEFAULT 1, name VARCHAR(9) DEFAULT NULL, created TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP);`;
    assert.equal(masked(plain, 'mysql'), plain);
  });

  it('dynamic SQL and calls that pass values to routines or prepared statements are refused', () => {
    refused(`DECLARE @s NVARCHAR(MAX) = N'SELECT 1'; EXEC(@s);`, 'transactsql', /dynamic SQL/);
    refused(`EXEC sp_executesql @s;`, 'transactsql', /dynamic SQL/);
    refused(`SET @s = 'SELECT 1'; PREPARE st FROM @s;`, 'mysql', /dynamic SQL/);
    refused(`PREPARE p(text) AS INSERT INTO customers (name) VALUES ($1);`, 'postgresql', /dynamic SQL/);
    refused(`EXECUTE p('Jane Doe');`, 'postgresql', /routine or prepared statement/);
    refused(`EXECUTE st USING @n;`, 'mysql', /routine or prepared statement/);
    refused(`CALL add_customer('Jane Doe');`, 'mysql', /routine or prepared statement/);
    refused(`EXEC dbo.add_customer @name = N'Jane Doe';`, 'transactsql', /routine or prepared statement/);
    assert.equal(masked(`EXECUTE p;`, 'postgresql'), `EXECUTE p;`);
  });

  it('property (SQLite shapes): a literal name in any INSERT/UPDATE shape is protected or refused, never sent in clear', () => {
    fc.assert(
      fc.property(fc.nat({ max: INSERT_SHAPES.length - 1 }), fc.constantFrom(NAME, 'Zoë Ünal', "O'Neil"), (k, value) => {
        const sql = INSERT_SHAPES[k](`'${value.replaceAll("'", "''")}'`);
        let out: string;
        try {
          out = masked(sql, 'sqlite');
        } catch (err) {
          assert.ok(err instanceof DpgError && err.code === 'MALFORMED_DATA_SET', String(err));
          return;
        }
        assert.ok(!out.includes(value.replaceAll("'", "''")), `clear value sent: ${out}`);
      }),
      { numRuns: 200 },
    );
  });
});
