// The SQL fuzz targets read each script once per route (memoSqlReads): a remembered read must be
// what a fresh read gives, before and after the engine used it, and a remembered refusal is thrown again.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError } from '../../src/core/errors.ts';
import { sqlDialect } from '../../src/formats/sql/dialects.ts';
import { memoSqlReads, readSqlScript, type SqlScript } from '../../src/formats/sql/script.ts';
import { job, testEngine } from '../helpers/engine.ts';

const engine = testEngine();
const SQL = [
  "INSERT INTO customers (name, cardNumber, note) VALUES ('Jane Doe', '4111 1111 1111 1111', 'call 555-123-4567');",
  "UPDATE customers SET email = 'jane@example.com' WHERE ssn = '123-45-6789';",
  // Not a plain statement: the 'auto' route gives it to the parser too.
  "INSERT INTO customers (name) SELECT name FROM staging WHERE iban = 'DE89370400440532013000';",
].join('\n');

function withMemo<T>(run: (memo: Map<string, unknown>) => T): T {
  const memo = new Map();
  memoSqlReads(memo);
  try {
    return run(memo);
  } finally {
    memoSqlReads(undefined);
  }
}

describe('memoSqlReads (the SQL fuzz targets)', () => {
  it('reads a script once per route; the engine leaves the remembered read as a fresh read gives it', () => {
    const dialect = sqlDialect('mysql');
    const fresh = (route: 'auto' | 'parser'): SqlScript => readSqlScript(SQL, dialect, undefined, route);
    const expected = { auto: fresh('auto'), parser: fresh('parser') };
    withMemo((memo) => {
      const auto = readSqlScript(SQL, dialect);
      const parser = readSqlScript(SQL, dialect, undefined, 'parser');
      assert.equal(readSqlScript(SQL, dialect), auto, 'the second read is the remembered one');
      for (const jobType of ['Mask', 'Pseudonymise', 'Encrypt'] as const) {
        const out = engine.protectDocument(job('customer', jobType, { sqlDialect: 'mysql' }, 'SQL'), SQL).dataSet;
        assert.notEqual(out, SQL);
      }
      assert.equal(memo.size, 2, 'one read per route: the three jobs took the remembered one');
      assert.deepStrictEqual(auto, expected.auto);
      assert.deepStrictEqual(parser, expected.parser);
    });
  });

  it('a refusal is remembered and thrown again; without the memo every read is fresh', () => {
    const dialect = sqlDialect('postgresql');
    const bad = "INSERT INTO customers (name) VALUES ('Jane";
    withMemo((memo) => {
      let first: unknown;
      assert.throws(() => readSqlScript(bad, dialect), (err) => ((first = err), err instanceof DpgError));
      assert.throws(() => readSqlScript(bad, dialect), (err) => err === first);
      assert.equal(memo.size, 1);
    });
    assert.notEqual(readSqlScript(SQL, dialect), readSqlScript(SQL, dialect));
  });
});
