// Reads one SQL script on both routes — 'auto' (plain statements on their tokens) and 'parser'
// (every statement through node-sql-parser) — and asserts they agree. Shared by
// test/formats/sql/paths-agree.test.ts and the SQL fuzz targets.

import assert from 'node:assert/strict';
import { DpgError } from '../../../src/core/errors.ts';
import type { SqlDialect } from '../../../src/formats/sql/dialects.ts';
import { readSqlScript, tokenLiteralKey, type SqlLimits, type SqlScript, type SqlStatement } from '../../../src/formats/sql/script.ts';

export interface Read {
  readonly sql: string;
  readonly dialect: SqlDialect;
  readonly limits: SqlLimits;
}

export function outcome<T>(run: () => T): { value: T } | { error: string } {
  try {
    return { value: run() };
  } catch (err) {
    if (err instanceof DpgError) return { error: `${err.code}: ${err.message}` };
    throw err;
  }
}

/** What a statement must read the same on both routes (the route itself and the tree's own comparison list aside). */
function comparable(st: SqlStatement): Omit<SqlStatement, 'plain' | 'astComparisons'> {
  const { plain: _plain, astComparisons: _tree, ...rest } = st;
  return rest;
}

/**
 * Reads the script both ways; asserts they agree and returns how many statements took the token path.
 * A plain statement lists no tree comparisons: so the parser's, for the same statement, must all be
 * ones the tokens found (the codec's cross-check would pass whatever columns are protected).
 */
export function readsAlike(read: Read): { plain: number; statements: number } {
  const { sql, dialect, limits } = read;
  const auto = outcome(() => readSqlScript(sql, dialect, limits, 'auto'));
  const parser = outcome(() => readSqlScript(sql, dialect, limits, 'parser'));
  const what = `${dialect.name}: ${JSON.stringify(sql).slice(0, 400)}`;
  if ('error' in auto || 'error' in parser) {
    assert.deepEqual(auto, parser, what);
    return { plain: 0, statements: 0 };
  }
  const a: SqlScript = auto.value;
  const b: SqlScript = parser.value;
  assert.deepStrictEqual(a.tokens.all(), b.tokens.all(), what);
  assert.deepStrictEqual(a.variables, b.variables, what);
  assert.deepStrictEqual(a.valuesNames, b.valuesNames, what);
  assert.equal(a.statements.length, b.statements.length, what);
  let plain = 0;
  a.statements.forEach((st, k) => {
    const full = b.statements[k];
    assert.equal(full.plain, false);
    assert.deepStrictEqual(comparable(st), comparable(full), `${what}\nstatement ${k}`);
    if (!st.plain) {
      assert.deepStrictEqual(st.astComparisons, full.astComparisons, `${what}\nstatement ${k}`);
      return;
    }
    plain++;
    const found = new Map<string, number>();
    for (const cmp of full.comparisons) for (const slot of cmp.slots) {
      const key = cmp.column.name.toLowerCase() + '\u0000' + tokenLiteralKey(b.tokens, slot);
      found.set(key, (found.get(key) ?? 0) + 1);
    }
    for (const cmp of full.astComparisons) for (const literal of cmp.keys) {
      const key = cmp.column.toLowerCase() + '\u0000' + literal;
      const left = found.get(key) ?? 0;
      assert.ok(left > 0, `${what}\nstatement ${k}: the tree compares ${cmp.column} with a literal the tokens do not`);
      found.set(key, left - 1);
    }
  });
  return { plain, statements: a.statements.length };
}
