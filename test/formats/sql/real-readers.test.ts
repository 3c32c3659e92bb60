// Issue 16, classes 4 and 5 against the servers themselves: the protected scripts run in a real SQLite
// (the sqlite3 shell) and a real PostgreSQL (a throwaway server on a Unix socket in a temp directory),
// and what they store is checked. PostgreSQL also decodes every generated E'…' and U&'…' spelling, so
// the gateway's reading is compared with the server's, value by value. A missing server is one skip line.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DpgError } from '../../../src/core/errors.ts';
import type { Scalar } from '../../../src/core/types.ts';
import type { FieldAction, FieldResolver } from '../../../src/formats/codec.ts';
import { protectSql } from '../../../src/formats/sql/index.ts';
import { SQLITE_MISSING, sqlite, sqliteAvailable, startPostgres, type Postgres } from '../../helpers/sql-servers.ts';
import { CARD, EMAIL, INSERT_SHAPES, NAME, spell } from './spellings.ts';

function action(fn: (v: Scalar) => Scalar): FieldAction {
  return { removes: () => false, apply: (v) => fn(v), applyBatch: (vs) => vs.map((v) => fn(v)) };
}
const star = action((v) => (v === null ? null : String(v).replace(/[^ @]/g, '*')));
const reverse = action((v) => (typeof v === 'string' ? [...v].reverse().join('') : v));
const resolverOf = (map: Record<string, FieldAction>): FieldResolver => ({ usesPaths: false, resolve: (name) => map[name.toLowerCase()] });

/** The protected script, or undefined when the gateway refuses it (with MALFORMED_DATA_SET only). */
function protectOrRefuse(sql: string, dialect: string, resolver = resolverOf({ name: star })): string | undefined {
  try {
    return protectSql(sql, resolver, { sqlDialect: dialect });
  } catch (err) {
    assert.ok(err instanceof DpgError && err.code === 'MALFORMED_DATA_SET', String(err));
    return undefined;
  }
}

const VALUES = [NAME, 'Zoë Ünal', "O'Neil"];
/** The value as stored, or as SQLite's UPPER (ASCII letters only) stores it. */
const storedIn = (text: string, v: string) => text.includes(v) || text.includes(v.replace(/[a-z]/g, (c) => c.toUpperCase())) || text.includes(v.toUpperCase());
const quoted = (v: string) => `'${v.replaceAll("'", "''")}'`;

describe('SQLite stores what the gateway protected (class 5)', () => {
  const available = sqliteAvailable();
  const SETUP = `CREATE TABLE customers (name TEXT, id INT);\nINSERT INTO customers (name, id) VALUES ('seed', 1);\n`;

  it('every INSERT/UPDATE shape: protected or refused, and a protected one never stores the clear name', (t) => {
    if (!available) {
      t.skip(`${SQLITE_MISSING}: the SQLite reader test did not run`);
      return;
    }
    let protectedCount = 0;
    let refusedCount = 0;
    for (const shape of INSERT_SHAPES) {
      for (const value of VALUES) {
        const script = shape(quoted(value));
        // The shape is a real path: SQLite stores the clear value when nothing protects it.
        let stored: string;
        try {
          stored = sqlite(`${SETUP}${script}\nSELECT name FROM customers;`);
        } catch {
          continue; // a shape this SQLite does not accept carries nothing
        }
        assert.ok(storedIn(stored, value), `${script} did not store the value in clear`);
        const out = protectOrRefuse(script, 'sqlite');
        if (out === undefined) {
          refusedCount++;
          continue;
        }
        protectedCount++;
        const after = sqlite(`${SETUP}${out}\nSELECT name FROM customers;`);
        assert.ok(!storedIn(after, value), `clear value stored by ${out}:\n${after}`);
      }
    }
    // The direct shapes are protected in place (not all refused): VALUES, SELECT lists, UNION arms, UPDATE … SET.
    assert.ok(protectedCount >= 5 * VALUES.length, `${protectedCount} protected, ${refusedCount} refused`);
    assert.ok(refusedCount > 0);
  });

  it('a protected column default: rows that do not name the column store the masked default', (t) => {
    if (!available) {
      t.skip(`${SQLITE_MISSING}: the SQLite reader test did not run`);
      return;
    }
    const script = `CREATE TABLE customers (id INT, name TEXT DEFAULT 'Jane Doe');\nINSERT INTO customers (id) VALUES (1);`;
    assert.equal(sqlite(`${script}\nSELECT name FROM customers;`), 'Jane Doe\n');
    const out = protectOrRefuse(script, 'sqlite');
    assert.ok(out !== undefined);
    assert.equal(sqlite(`${out}\nSELECT name FROM customers;`), '**** ***\n');
  });

  it('a generated mix of shapes and names is never stored in clear', (t) => {
    if (!available) {
      t.skip(`${SQLITE_MISSING}: the SQLite reader test did not run`);
      return;
    }
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat({ max: INSERT_SHAPES.length - 1 }), fc.constantFrom(...VALUES)), { minLength: 1, maxLength: 4 }), (parts) => {
        const script = parts.map(([k, v]) => INSERT_SHAPES[k](quoted(v))).join('\n');
        const out = protectOrRefuse(script, 'sqlite');
        if (out === undefined) return;
        let after: string;
        try {
          after = sqlite(`${SETUP}${out}\nSELECT name FROM customers;`);
        } catch {
          return; // refused by SQLite itself: nothing stored
        }
        for (const [, v] of parts) assert.ok(!storedIn(after, v), `clear value stored by ${out}`);
      }),
      { numRuns: 40 },
    );
  });
});

describe('PostgreSQL reads E\'…\' and U&\'…\' as the gateway does, and stores what it protected (classes 4 and 5)', () => {
  let pg: Postgres | string = 'not started';

  before(() => {
    pg = startPostgres();
  });
  after(() => {
    if (typeof pg !== 'string') pg.close();
  });

  function server(t: { skip(message: string): void }): Postgres | undefined {
    if (typeof pg === 'string') {
      t.skip(`${pg}: the PostgreSQL reader test did not run`);
      return undefined;
    }
    return pg;
  }

  it('every generated escape spelling of a card, an email and a name decodes on the server to what the gateway read', (t) => {
    const db = server(t);
    if (db === undefined) return;
    const values = [CARD, EMAIL, NAME, 'Zoë Ünal', "O'Neil \\ 😀", 'tab\there'];
    const spellings = fc.sample(
      fc.tuple(fc.constantFrom('postgresql-E' as const, 'postgresql-U&' as const), fc.constantFrom(...values), fc.infiniteStream(fc.nat())),
      { numRuns: 300, seed: 16 },
    );
    const literals: string[] = [];
    const ours: Scalar[] = [];
    for (const [kind, value, choices] of spellings) {
      const lit = spell(kind, value, choices);
      const seen: Scalar[] = [];
      protectSql(`INSERT INTO customers (name) VALUES (${lit.text});`, resolverOf({ name: action((v) => (seen.push(v), v)) }), { sqlDialect: 'postgresql' });
      assert.deepEqual(seen, [value]);
      literals.push(lit.text);
      ours.push(seen[0]);
    }
    const r = db.psql(literals.map((l) => `SELECT ${l};`).join('\n'));
    assert.ok(r.ok, r.ok ? '' : r.err);
    const theirs = r.out.split('\0').filter((row, k, all) => k < all.length - 1 || row !== '');
    assert.deepEqual(theirs, ours);
  });

  it('a protected E\'…\' or U&\'…\' literal is written back so that the server reads the protected value', (t) => {
    const db = server(t);
    if (db === undefined) return;
    const inputs = [String.raw`E'Jane\x20D\157e\\ it\'s'`, String.raw`E'\u004a\x61ne \U0001F600'`, String.raw`U&'J\0061ne \\ it''s \+01F600'`];
    for (const literal of inputs) {
      const seen: Scalar[] = [];
      protectSql(`SELECT * FROM customers WHERE name = ${literal};`, resolverOf({ name: action((v) => (seen.push(v), v)) }), { sqlDialect: 'postgresql' });
      const out = protectSql(`SELECT * FROM customers WHERE name = ${literal};`, resolverOf({ name: reverse }), { sqlDialect: 'postgresql' });
      const written = out.slice(out.lastIndexOf('= ') + 2, -1);
      assert.ok(written.startsWith(literal.slice(0, 2)), written);
      const r = db.psql(`SELECT ${written};`);
      assert.ok(r.ok, r.ok ? '' : r.err);
      assert.equal(r.out.replace(/\0$/, ''), [...(seen[0] as string)].reverse().join(''));
    }
  });

  it('every INSERT/UPDATE shape (and the PostgreSQL-only ones): protected or refused, never stored in clear', (t) => {
    const db = server(t);
    if (db === undefined) return;
    const shapes = [
      ...INSERT_SHAPES,
      (l: string) => `INSERT INTO customers (name, id) (SELECT ${l}, 1);`,
      (l: string) => `INSERT INTO customers (name, id) ((SELECT ${l}, 1));`,
      (l: string) => `INSERT INTO customers (name, id) (SELECT 'x', 0) UNION ALL (SELECT ${l}, 1);`,
      (l: string) => `INSERT INTO customers (name, id) SELECT * FROM unnest(ARRAY[${l}], ARRAY[1]);`,
      (l: string) => `INSERT INTO customers (name, id) SELECT a, 1 FROM (SELECT ${l}) AS t(a);`,
    ];
    const literals = [quoted(NAME), String.raw`E'J\x61ne D\157e'`, String.raw`U&'J\0061ne Doe'`];
    const scripts = shapes.flatMap((shape) => literals.map((lit) => shape(lit)));
    // One psql session for all cases: each runs in a transaction rolled back after its SELECT, and a case
    // the server rejects leaves no marker row (its errors end with the ROLLBACK).
    const run = (list: (string | undefined)[]): Map<number, string> => {
      const body = list
        .map((sql, k) =>
          sql === undefined
            ? ''
            : `BEGIN;\nCREATE TEMP TABLE customers (name text, id int) ON COMMIT DROP;\nINSERT INTO customers VALUES ('seed', 1);\n${sql}\nSELECT 'case ${k}:' || string_agg(name, ',') FROM customers;\nROLLBACK;\n`,
        )
        .join('');
      const r = db.psql(body, true);
      const rows = new Map<number, string>();
      for (const row of (r.ok ? r.out : '').split('\0')) {
        const m = /^case (\d+):(.*)$/s.exec(row);
        if (m !== null) rows.set(Number(m[1]), m[2]);
      }
      return rows;
    };
    const clear = run(scripts);
    const outs = scripts.map((sql) => protectOrRefuse(sql, 'postgresql'));
    const stored = run(outs.map((out, k) => (clear.has(k) ? out : undefined)));
    let protectedCount = 0;
    scripts.forEach((sql, k) => {
      if (!clear.has(k)) return; // not valid on this server: carries nothing
      assert.ok(/Jane|JANE/.test(clear.get(k)!), `${sql} did not store the value in clear`);
      if (outs[k] === undefined) return;
      protectedCount++;
      assert.ok(stored.has(k), `the protected script failed on the server: ${outs[k]}`);
      assert.ok(!/Jane|JANE/.test(stored.get(k)!), `clear value stored by ${outs[k]}`);
    });
    assert.ok(protectedCount >= 15, `${protectedCount} protected`);
  });
});
