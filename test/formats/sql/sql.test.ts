import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DpgError } from '../../../src/core/errors.ts';
import type { Scalar } from '../../../src/core/types.ts';
import type { FieldAction, FieldResolver } from '../../../src/formats/codec.ts';
import { flattenSql, protectSql, sqlCodec, sqlDialect, SQL_DIALECTS } from '../../../src/formats/sql/index.ts';

// Fake actions, so these tests need no engine.
function action(fn: (v: Scalar) => Scalar, removes: (v: Scalar) => boolean = () => false): FieldAction {
  return {
    removes,
    apply: (v) => fn(v),
    applyBatch: (vs) => vs.map((v) => fn(v)),
  };
}
const reverse = action((v) => (typeof v === 'string' ? [...v].reverse().join('') : v));
const mask = action((v) => (v === null ? null : String(v).replace(/[^@]/g, '*')));
const restrict = action((v) => v, (v) => v !== null);
const plusOne = action((v) => (typeof v === 'number' ? v + 1 : v));
const tag = action((v) => (v === null ? null : `T(${String(v)})`));

function resolverOf(map: Record<string, FieldAction>, seen?: string[]): FieldResolver {
  return {
    usesPaths: seen !== undefined,
    resolve(name, path) {
      seen?.push(`${name}|${path}`);
      return map[name.toLowerCase()] ?? (path === undefined ? undefined : map[path.toLowerCase()]);
    },
  };
}

const rev = resolverOf({ name: reverse, email: reverse, ssn: reverse });

function expectError(fn: () => unknown, code: string, mustNotContain: string[] = []): DpgError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof DpgError, `expected DpgError, got ${String(err)}`);
    assert.equal(err.code, code);
    for (const s of mustNotContain) assert.ok(!err.message.includes(s), `error message leaks ${s}: ${err.message}`);
    return err;
  }
  assert.fail('expected an error');
}

describe('sql dialects', () => {
  it('defaults to MySQL, accepts every listed dialect and rejects unknown ones', () => {
    assert.equal(sqlDialect(undefined).name, 'mysql');
    for (const name of SQL_DIALECTS) assert.equal(sqlDialect(name.toUpperCase()).name, name);
    assert.equal(sqlDialect('postgres').name, 'postgresql');
    expectError(() => sqlDialect('oracle'), 'INVALID_REQUEST');
    expectError(() => sqlDialect('__proto__'), 'INVALID_REQUEST');
    expectError(() => protectSql('SELECT 1', rev, { sqlDialect: 'cobol' }), 'INVALID_REQUEST');
  });
});

// One realistic script per dialect in that dialect's quoting styles, and what the reversing action makes of it.
const scripts: Record<string, { sql: string; expected: string }> = {
  mysql: {
    sql: "INSERT INTO `users` (id, `name`, email) VALUES (1, 'O''Neil', N'ann@example.com'), (2, \"Bob \\\"B\\\"\", NULL);\n-- a comment with 'quotes'\nUPDATE users SET email = 'x@y.org', `name` = 'Zed' WHERE id = 3;\nSELECT * FROM users WHERE name = 'Alice' AND (email IN ('a@b.c', 'd@e.f') OR id BETWEEN 1 AND 9);",
    expected: "INSERT INTO `users` (id, `name`, email) VALUES (1, 'lieN''O', N'moc.elpmaxe@nna'), (2, \"\\\"B\\\" boB\", NULL);\n-- a comment with 'quotes'\nUPDATE users SET email = 'gro.y@x', `name` = 'deZ' WHERE id = 3;\nSELECT * FROM users WHERE name = 'ecilA' AND (email IN ('c.b@a', 'f.e@d') OR id BETWEEN 1 AND 9);",
  },
  mariadb: {
    sql: "INSERT INTO t (name, ssn) VALUES ('Al\\\\ice', '123-45'), ('Bo', '999');\nSELECT * FROM t WHERE ssn = '123-45';",
    expected: "INSERT INTO t (name, ssn) VALUES ('eci\\\\lA', '54-321'), ('oB', '999');\nSELECT * FROM t WHERE ssn = '54-321';",
  },
  postgresql: {
    sql: `INSERT INTO "Users" ("Name", email) VALUES ('O''Neil', 'a@b.c'), ('Eve', E'e\\'v@x.y');\nUPDATE "Users" SET "email" = 'new@x.y' WHERE "Name" = 'Eve';\nSELECT * FROM "Users" WHERE email IN ('p@q.r') AND id BETWEEN 1 AND 2;`,
    expected: `INSERT INTO "Users" ("Name", email) VALUES ('lieN''O', 'c.b@a'), ('evE', E'y.x@v\\'e');\nUPDATE "Users" SET "email" = 'y.x@wen' WHERE "Name" = 'evE';\nSELECT * FROM "Users" WHERE email IN ('r.q@p') AND id BETWEEN 1 AND 2;`,
  },
  transactsql: {
    sql: `INSERT INTO [dbo].[Users] ([Name], "email") VALUES (N'O''Neil', 'a@b.c'), (N'Émile', 'e@f.g');\nUPDATE [Users] SET [email] = N'z@z.z' WHERE [Name] = N'Émile';\nSELECT * FROM [Users] WHERE [email] IN ('a@b.c', 'q@r.s') AND [id] BETWEEN 1 AND 5;`,
    expected: `INSERT INTO [dbo].[Users] ([Name], "email") VALUES (N'lieN''O', 'c.b@a'), (N'elimÉ', 'g.f@e');\nUPDATE [Users] SET [email] = N'z.z@z' WHERE [Name] = N'elimÉ';\nSELECT * FROM [Users] WHERE [email] IN ('c.b@a', 's.r@q') AND [id] BETWEEN 1 AND 5;`,
  },
  sqlite: {
    sql: "INSERT INTO `users` (`name`, \"email\", id) VALUES ('O''Neil', 'a@b.c', 1);\nUPDATE users SET name = 'Ann' WHERE \"email\" = 'a@b.c';\nSELECT * FROM users WHERE name IN ('Ann', 'Bea') AND id BETWEEN 1 AND 2;",
    expected: "INSERT INTO `users` (`name`, \"email\", id) VALUES ('lieN''O', 'c.b@a', 1);\nUPDATE users SET name = 'nnA' WHERE \"email\" = 'c.b@a';\nSELECT * FROM users WHERE name IN ('nnA', 'aeB') AND id BETWEEN 1 AND 2;",
  },
  bigquery: {
    sql: "INSERT INTO `proj.ds.users` (name, email) VALUES ('O\\'Neil', \"a@b.c\");\nUPDATE `proj.ds.users` SET email = 'x@y.z' WHERE name = 'Ann';\nSELECT * FROM `proj.ds.users` WHERE email IN ('a@b.c') AND id BETWEEN 1 AND 2;",
    expected: "INSERT INTO `proj.ds.users` (name, email) VALUES ('lieN\\'O', \"c.b@a\");\nUPDATE `proj.ds.users` SET email = 'z.y@x' WHERE name = 'nnA';\nSELECT * FROM `proj.ds.users` WHERE email IN ('c.b@a') AND id BETWEEN 1 AND 2;",
  },
  snowflake: {
    sql: `INSERT INTO users (name, email) VALUES ('O''Neil', 'a@b.c'), ('Bo', 'b@c.d');\nUPDATE users SET email = 'x@y.z' WHERE name = 'Bo';\nSELECT * FROM users WHERE "email" IN ('a@b.c') AND id BETWEEN 1 AND 2;`,
    expected: `INSERT INTO users (name, email) VALUES ('lieN''O', 'c.b@a'), ('oB', 'd.c@b');\nUPDATE users SET email = 'z.y@x' WHERE name = 'oB';\nSELECT * FROM users WHERE "email" IN ('c.b@a') AND id BETWEEN 1 AND 2;`,
  },
};

describe('sqlCodec protect', () => {
  for (const [dialect, { sql, expected }] of Object.entries(scripts)) {
    it(`${dialect}: protects INSERT, UPDATE and WHERE literals in place and round-trips`, () => {
      const out = protectSql(sql, rev, { sqlDialect: dialect });
      assert.equal(out, expected);
      assert.equal(protectSql(out, rev, { sqlDialect: dialect }), sql);
    });
  }

  it('is exposed as a DocumentCodec of type SQL and refuses non-text input', () => {
    assert.equal(sqlCodec.type, 'SQL');
    assert.equal(sqlCodec.protect("SELECT 1 FROM t WHERE name = 'ab'", rev, {}), "SELECT 1 FROM t WHERE name = 'ba'");
    expectError(() => sqlCodec.protect({ sql: 'x' }, rev, {}), 'MALFORMED_DATA_SET');
  });

  it('leaves statements without protected columns byte for byte', () => {
    const sql = "/* header */\nCREATE TABLE t (id INT, note VARCHAR(20));\n  INSERT INTO t (id, note) VALUES (1, 'it''s');   -- done\n";
    assert.equal(protectSql(sql, rev, {}), sql);
    assert.equal(protectSql('', rev, {}), '');
    assert.equal(protectSql('  -- only a comment\n', rev, {}), '  -- only a comment\n');
  });

  it('keeps numbers numeric when the result is numeric, quotes it otherwise', () => {
    const r = resolverOf({ age: plusOne, card: mask, ssn: tag });
    assert.equal(
      protectSql('INSERT INTO t (age, card, ssn) VALUES (41, 4111111111111111, -7), (-3, 1.5, 0)', r, {}),
      "INSERT INTO t (age, card, ssn) VALUES (42, '****************', 'T(-7)'), (-2, '***', 'T(0)')",
    );
    // Beyond 2^53 a number is handed over as text, so no digit is lost.
    const seen: Scalar[] = [];
    const spy = resolverOf({ id: action((v) => (seen.push(v), v)) });
    protectSql('SELECT * FROM t WHERE id = 123456789012345678901', spy, {});
    assert.deepEqual(seen, ['123456789012345678901']);
  });

  it('passes NULL through unless the action changes it', () => {
    const filler = resolverOf({ email: action((v) => (v === null ? 'none' : v)) });
    assert.equal(protectSql("INSERT INTO t (email) VALUES (NULL), ('a')", rev, {}), "INSERT INTO t (email) VALUES (NULL), ('a')");
    assert.equal(protectSql("INSERT INTO t (email) VALUES (NULL)", filler, {}), "INSERT INTO t (email) VALUES ('none')");
    const nuller = resolverOf({ email: action(() => null) });
    assert.equal(protectSql("UPDATE t SET email = 'a@b' WHERE email = 'c'", nuller, {}), 'UPDATE t SET email = NULL WHERE email = NULL');
  });

  it('protects comparisons nested in AND/OR/NOT; expressions without literals pass', () => {
    assert.equal(
      protectSql("UPDATE t SET name = CONCAT(first, last) WHERE NOT (email = 'xy' OR (ssn <> '12' AND email LIKE 'q%'))", rev, {}),
      "UPDATE t SET name = CONCAT(first, last) WHERE NOT (email = 'yx' OR (ssn <> '21' AND email LIKE '%q'))",
    );
  });

  it('binds literals on either side, qualified columns, and leaves arithmetic operands alone', () => {
    assert.equal(
      protectSql("SELECT * FROM users u JOIN x ON u.id = x.id WHERE 'ab' = u.name AND x.email >= 'cd' AND id + other = 'ef'", rev, {}),
      "SELECT * FROM users u JOIN x ON u.id = x.id WHERE 'ba' = u.name AND x.email >= 'dc' AND id + other = 'ef'",
    );
  });

  it('keeps WHERE matching the INSERT when the action is deterministic', () => {
    const out = protectSql("INSERT INTO u (email) VALUES ('ann@x.io');\nDELETE FROM u WHERE email = 'ann@x.io';", rev, {});
    const literals = out.match(/'[^']*'/g)!;
    assert.equal(literals.length, 2);
    assert.equal(literals[0], literals[1]);
    assert.notEqual(literals[0], "'ann@x.io'");
  });

  it('handles INSERT … SELECT and ON DUPLICATE KEY UPDATE', () => {
    assert.equal(
      protectSql("INSERT INTO t (name, id) SELECT 'ab', id FROM s WHERE email = 'cd' ON DUPLICATE KEY UPDATE name = 'ef'", rev, {}),
      "INSERT INTO t (name, id) SELECT 'ba', id FROM s WHERE email = 'dc' ON DUPLICATE KEY UPDATE name = 'fe'",
    );
  });

  it('gives resolvers the column name and table.column path (aliases resolved)', () => {
    const seen: string[] = [];
    const r = resolverOf({}, seen);
    protectSql("INSERT INTO users (email) VALUES ('a'); UPDATE users u SET u.name = 'b' WHERE u.ssn = 'c'; SELECT * FROM a, b WHERE phone = 'd'", r, {});
    assert.deepEqual(new Set(seen), new Set(['email|users.email', 'name|users.name', 'ssn|users.ssn', 'phone|phone']));
    const byPath = resolverOf({ 'users.email': reverse }, []);
    assert.equal(protectSql("INSERT INTO users (email) VALUES ('ab'); INSERT INTO other (email) VALUES ('ab')", byPath, {}), "INSERT INTO users (email) VALUES ('ba'); INSERT INTO other (email) VALUES ('ab')");
  });
});

describe('sqlCodec Restrict', () => {
  const r = resolverOf({ ssn: restrict, salary: restrict, name: reverse });

  it('removes the column from the column list and every VALUES row', () => {
    assert.equal(
      protectSql("INSERT INTO t (ssn, name, salary, id) VALUES ('1', 'ab', 10, 1), ('2', 'cd', 20, 2);", r, {}),
      "INSERT INTO t (name, id) VALUES ('ba', 1), ('dc', 2);",
    );
    assert.equal(protectSql("INSERT INTO t (id, ssn) VALUES (1, '1')", r, {}), 'INSERT INTO t (id) VALUES (1)');
    assert.equal(protectSql("INSERT INTO t (id, ssn) VALUES (1, NULL), (2, '9')", r, {}), 'INSERT INTO t (id) VALUES (1), (2)');
  });

  it('removes assignments, and drops an UPDATE or INSERT left with nothing', () => {
    assert.equal(protectSql("UPDATE t SET ssn = '1', name = 'ab', salary = 3 WHERE id = 1", r, {}), "UPDATE t SET name = 'ba' WHERE id = 1");
    assert.equal(protectSql("UPDATE t SET id = 2, ssn = '1' WHERE id = 1", r, {}), 'UPDATE t SET id = 2 WHERE id = 1');
    assert.equal(protectSql("SELECT 1;\nUPDATE t SET ssn = '1' WHERE id = 1;\nSELECT 2;", r, {}), 'SELECT 1;\n\nSELECT 2;');
    assert.equal(protectSql("INSERT INTO t (ssn, salary) VALUES ('1', 2); SELECT 1", r, {}), ' SELECT 1');
    assert.equal(protectSql("INSERT INTO t (id) VALUES (1) ON DUPLICATE KEY UPDATE ssn = '1'", r, {}), 'INSERT INTO t (id) VALUES (1) ');
  });

  it('turns a removed column in WHERE into NULL, which can only narrow what matches', () => {
    assert.equal(
      protectSql("DELETE FROM t WHERE ssn = '123-45-6789' OR ssn IN ('1', '2') OR salary BETWEEN 1 AND 2", r, {}),
      'DELETE FROM t WHERE ssn = NULL OR ssn IN (NULL, NULL) OR salary BETWEEN NULL AND NULL',
    );
  });
});

describe('sqlCodec refuses what it cannot protect reliably', () => {
  it('INSERT with literal values but no column list', () => {
    expectError(() => protectSql("INSERT INTO t VALUES ('4111111111111111')", rev, {}), 'MALFORMED_DATA_SET', ['4111']);
    assert.equal(protectSql('INSERT INTO t VALUES (?, ?)', rev, {}), 'INSERT INTO t VALUES (?, ?)');
  });

  it('a comparison on a protected column the parser sees but the token reading misses', () => {
    expectError(() => protectSql("SELECT * FROM t WHERE email = ('secret@x.io')", rev, {}), 'MALFORMED_DATA_SET', ['secret']);
    assert.equal(protectSql("SELECT * FROM t WHERE other = ('a')", rev, {}), "SELECT * FROM t WHERE other = ('a')");
  });

  it('malformed SQL: position given, input never echoed', () => {
    const err = expectError(() => protectSql("SELECT * FROM t WHERE name = 'SECRETVALUE' 'x' zz", rev, {}), 'MALFORMED_DATA_SET', ['SECRETVALUE', 'zz']);
    assert.match(err.message, /line 1, column \d+/);
    const unterminated = expectError(() => protectSql("INSERT INTO t (a) VALUES ('SECRET", rev, {}), 'MALFORMED_DATA_SET', ['SECRET']);
    assert.match(unterminated.message, /line 1, column 27: unterminated string/);
    expectError(() => protectSql('INSERT INTO t (a, b) VALUES (1)', rev, { sqlDialect: 'postgresql' }), 'MALFORMED_DATA_SET');
    expectError(() => protectSql('SELECT /* open', rev, {}), 'MALFORMED_DATA_SET');
  });
});

describe('sqlCodec limits', () => {
  // Outcomes only: the time is measured in bench/sql.bench.ts (a clock here fails on a loaded machine).
  it('very long literals and many rows are handled', () => {
    const long = 'x'.repeat(200_000);
    const out = protectSql(`INSERT INTO t (name) VALUES ('${long}a')`, rev, {});
    assert.equal(out, `INSERT INTO t (name) VALUES ('a${long}')`);
    const rows = Array.from({ length: 2000 }, (_, i) => `(${i}, 'n${i}')`).join(', ');
    const many = protectSql(`INSERT INTO t (id, name) VALUES ${rows};`, rev, {});
    assert.ok(many.includes("(0, '0n')"));
    assert.ok(many.includes("(1999, '9991n')"));
  });

  it('deep nesting, oversize scripts and too many statements are refused with clear errors', () => {
    expectError(() => protectSql(`SELECT ${'('.repeat(100_000)}1${')'.repeat(100_000)}`, rev, {}), 'MALFORMED_DATA_SET');
    const limits = { maxLength: 100, maxStatements: 3, maxDepth: 8 };
    expectError(() => protectSql('SELECT 1;'.repeat(20), rev, {}, limits), 'PAYLOAD_TOO_LARGE');
    expectError(() => protectSql('SELECT 1;'.repeat(5), rev, {}, limits), 'PAYLOAD_TOO_LARGE');
    expectError(() => protectSql('SELECT ((((((((((1))))))))))', rev, {}, limits), 'MALFORMED_DATA_SET');
  });
});

describe('sqlCodec properties', () => {
  const text = fc.string({ unit: fc.constantFrom('a', 'Z', ' ', "'", '"', '\\', '%', 'é', '😀', '\n', '0', ';', '-') , maxLength: 12 });
  for (const dialect of ['mysql', 'postgresql', 'transactsql', 'bigquery']) {
    it(`${dialect}: any string value round-trips through a reversible action and stays parseable`, () => {
      fc.assert(
        fc.property(fc.array(text, { minLength: 1, maxLength: 4 }), (values) => {
          const rows = values.map((v, i) => `(${i}, ${encodeFor(dialect, v)})`).join(', ');
          const sql = `INSERT INTO t (id, name) VALUES ${rows};`;
          const once = protectSql(sql, rev, { sqlDialect: dialect });
          // The protected script is valid SQL whose values are the reversed strings.
          const flat = flattenSql(once, { sqlDialect: dialect });
          assert.deepEqual([...flat.rows].map((r) => r[1]), values.map((v) => [...v].reverse().join('')));
          const back = protectSql(once, rev, { sqlDialect: dialect });
          assert.deepEqual([...flattenSql(back, { sqlDialect: dialect }).rows].map((r) => r[1]), values);
        }),
        { numRuns: 60 },
      );
    });
  }
});

function encodeFor(dialect: string, v: string): string {
  if (dialect === 'bigquery') return `'${v.replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll('\n', '\\n')}'`;
  if (dialect === 'mysql') return `'${v.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
  return `'${v.replaceAll("'", "''")}'`;
}

describe('flattenSql', () => {
  it('one row per inserted row and per UPDATE, columns in first-seen order', () => {
    const flat = flattenSql("INSERT INTO u (id, name) VALUES (1, 'O''Neil'), (2, NULL); UPDATE u SET email = 'e@x' WHERE id = 1; SELECT 1", {});
    assert.deepEqual(flat.columns, ['id', 'name', 'email']);
    assert.deepEqual([...flat.rows], [['1', "O'Neil", ''], ['2', '', ''], ['', '', 'e@x']]);
  });

  it('adds a leading _table column when more than one table appears', () => {
    const flat = flattenSql(`INSERT INTO "a" (x) VALUES (-1.50); INSERT INTO b (y, x) VALUES ('q', NOW())`, { sqlDialect: 'postgresql' });
    assert.deepEqual(flat.columns, ['_table', 'x', 'y']);
    assert.deepEqual([...flat.rows], [['a', '-1.50', ''], ['b', 'NOW()', 'q']]);
  });
});

// The default `customer` manifest's ssn rule: Mask keepLast 4, digits only.
const maskKeepLast4 = action((v) => (v === null ? null : String(v).replace(/\d(?=(?:\D*\d){4})/g, '*')));

describe('sqlCodec refuses literals it cannot protect as one value (security review)', () => {
  const masked = resolverOf({ ssn: maskKeepLast4 });
  const removed = resolverOf({ ssn: restrict });
  const refused = (sql: string, r: FieldResolver = masked, dialect?: string): DpgError =>
    expectError(() => protectSql(sql, r, { sqlDialect: dialect }), 'MALFORMED_DATA_SET', ['123', '45', '6789', '4111']);

  it('finding 1: an expression bound to a protected column is refused, not masked piece by piece', () => {
    // Before: CONCAT('*23-45','-6789') — most of the SSN left in clear.
    const err = refused("INSERT INTO customer (id, ssn) VALUES (1, CONCAT('123-45','-6789'))");
    assert.match(err.message, /1:43 .*protected column ssn through an expression/);
    refused("INSERT INTO customer (id, ssn) VALUES (1, '123-45-6789'), (2, CONCAT('123', '-45-6789'))");
    refused("UPDATE customer SET ssn = CONCAT('123-45', '-6789') WHERE id = 1");
    refused('UPDATE customer SET ssn = 4111111111111111 + 0 WHERE id = 1');
    refused("INSERT INTO customer (id) VALUES (1) ON DUPLICATE KEY UPDATE ssn = CONCAT('123-45', '-6789')");
    refused("SELECT * FROM customer WHERE ssn = CONCAT('123-45','-6789')");
    refused("SELECT * FROM customer WHERE CONCAT('123-45','-6789') = ssn");
    refused("SELECT * FROM customer WHERE ssn IN ('1', CONCAT('123-45','-6789'))");
    refused("SELECT * FROM customer WHERE ssn = '123-45' || '-6789'", masked, 'postgresql');
    refused("SELECT * FROM customer WHERE ssn = CAST('123-45-6789' AS CHAR)");
    // A function of the column compared with a literal binds that literal to the column too.
    refused("SELECT * FROM customer WHERE LOWER(ssn) = '123-45-6789'");
  });

  it('finding 1: single literals, NULL, parameters and column references still pass; Restrict still removes', () => {
    assert.equal(
      protectSql("INSERT INTO customer (id, ssn) VALUES (1, '123-45-6789'), (2, ?), (3, NULL), (4, other), (5, NOW())", masked, {}),
      "INSERT INTO customer (id, ssn) VALUES (1, '***-**-6789'), (2, ?), (3, NULL), (4, other), (5, NOW())",
    );
    assert.equal(
      protectSql("SELECT * FROM customer WHERE ssn = ? AND ssn = :p AND ssn = other AND ssn IN ('123-45-6789') AND name = CONCAT('a', 'b')", masked, {}),
      "SELECT * FROM customer WHERE ssn = ? AND ssn = :p AND ssn = other AND ssn IN ('***-**-6789') AND name = CONCAT('a', 'b')",
    );
    assert.equal(
      protectSql("SELECT * FROM t WHERE ssn = '123-45-6789'::text AND ssn = $1", masked, { sqlDialect: 'postgresql' }),
      "SELECT * FROM t WHERE ssn = '***-**-6789'::text AND ssn = $1",
    );
    assert.equal(protectSql("INSERT INTO customer (id, ssn) VALUES (1, CONCAT('123-45','-6789'))", removed, {}), 'INSERT INTO customer (id) VALUES (1)');
    assert.equal(protectSql("UPDATE customer SET id = 2, ssn = CONCAT('123-45', '-6789') WHERE id = 1", removed, {}), 'UPDATE customer SET id = 2 WHERE id = 1');
    // In a comparison, Restrict cannot stand NULL in for an expression without risking a wider match: refused.
    refused("DELETE FROM customer WHERE ssn = CONCAT('123-45','-6789')", removed);
  });

  it('finding 2: subqueries, SELECT aliases and INSERT … SELECT are protected or refused', () => {
    for (const r of [masked, removed]) {
      refused("SELECT * FROM customer WHERE ssn IN (SELECT '123-45-6789')", r);
      refused("SELECT * FROM customer WHERE ssn = (SELECT '123-45-6789')", r);
      refused("SELECT '123-45-6789' AS ssn", r);
      refused("SELECT '123-45-6789' ssn", r);
      refused("SELECT 'x' AS ssn UNION SELECT '123-45-6789'", r);
      refused("SELECT x AS ssn FROM (SELECT '123-45-6789' AS x) s", r);
      refused("SELECT * FROM customer WHERE ssn IN (SELECT x FROM (SELECT '123-45-6789' AS x) s)", r);
      refused("WITH c(ssn) AS (SELECT '123-45-6789') SELECT * FROM c", r, 'postgresql');
      refused("SELECT * FROM (VALUES ('123-45-6789')) AS v(ssn)", r, 'postgresql');
      refused("INSERT INTO customer (id, ssn) SELECT id, x FROM (SELECT 1 AS id, '123-45-6789' AS x) s", r);
      refused("UPDATE customer SET ssn = s.x FROM (SELECT '123-45-6789' AS x) s WHERE customer.id = 1", r, 'postgresql');
    }
    refused("INSERT INTO customer (id, ssn) SELECT 1, CONCAT('123-45', '-6789')");
    // Without a column list the target of a literal is unknown.
    refused("INSERT INTO customer SELECT x FROM (SELECT '123-45-6789' AS x) s");
    // INSERT … SELECT literals are bound by position and protected, an alias included.
    assert.equal(
      protectSql("INSERT INTO customer (id, ssn) SELECT 1, '123-45-6789' AS ssn UNION SELECT 2, '987-65-4321'", masked, {}),
      "INSERT INTO customer (id, ssn) SELECT 1, '***-**-6789' AS ssn UNION SELECT 2, '***-**-4321'",
    );
    assert.equal(protectSql("INSERT INTO customer (id, ssn) SELECT 1, '123-45-6789'", removed, {}), 'INSERT INTO customer (id) SELECT 1');
  });

  it('finding 2: queries that bind no literal to a protected column pass untouched', () => {
    for (const sql of [
      'SELECT * FROM customer WHERE ssn IN (SELECT ssn FROM blocked WHERE active = 1)',
      "SELECT 1 AS id, 'x' AS note UNION SELECT 2, 'y'",
      'INSERT INTO customer (id, ssn) SELECT id, ssn FROM other WHERE id = 5',
      'SELECT COUNT(*) AS n FROM customer WHERE id = 5 GROUP BY ssn HAVING COUNT(*) > 1',
      "SELECT ssn, CONCAT(name, '!') AS greeting FROM customer",
    ]) {
      assert.equal(protectSql(sql, masked, {}), sql);
    }
  });
});
