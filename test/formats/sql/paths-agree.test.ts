// Issue 21: the token-level path (plain-statements.ts) and the full parser read every script alike.
// Each script is read both ways — 'auto' (plain statements on their tokens) and 'parser' (every
// statement through node-sql-parser) — and must give the same statements, or the same error; on a
// generated corpus per dialect the protected output bytes and the values handed to the actions
// must match too. The scripts of the other SQL test files are read again both ways as well.

import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DpgError } from '../../../src/core/errors.ts';
import type { Scalar } from '../../../src/core/types.ts';
import type { FieldAction, FieldResolver } from '../../../src/formats/codec.ts';
import { protectSql } from '../../../src/formats/sql/codec.ts';
import { sqlDialect, SQL_DIALECTS, type SqlDialect } from '../../../src/formats/sql/dialects.ts';
import { DEFAULT_SQL_LIMITS, observeSqlReads } from '../../../src/formats/sql/script.ts';
import { outcome, readsAlike, type Read } from './read-both-ways.ts';

// The other SQL tests' scripts: recorded as those tests run in this process, read both ways at the end.
const recorded = new Map<string, Read>();
observeSqlReads((sql, dialect, limits) => {
  if (recorded.size < 20_000) recorded.set(`${dialect.name}\u0000${limits.maxLength}\u0000${sql}`, { sql, dialect, limits });
});
await import('./sql.test.ts');
await import('./dialect-rules.test.ts');
await import('./escapes-and-flows.test.ts');

// ---- the generated corpus ----

/** An action that records what it is given, so both routes can be held to the same calls. */
function recording(log: string[], name: string, fn: (v: Scalar) => Scalar, removes: (v: unknown) => boolean = () => false): FieldAction {
  return {
    removes: (v) => {
      log.push(`${name} removes? ${JSON.stringify(v)}`);
      return removes(v);
    },
    apply: (v) => {
      log.push(`${name} ${JSON.stringify(v)}`);
      return fn(v);
    },
    applyBatch: (vs) => {
      log.push(`${name} batch ${JSON.stringify(vs)}`);
      return vs.map(fn);
    },
  };
}

function resolverFor(log: string[], resolved: Set<string>, usesPaths: boolean): FieldResolver {
  const reverse = (v: Scalar): Scalar => (typeof v === 'string' ? [...v].reverse().join('') : typeof v === 'number' ? v + 1 : v);
  const actions: Record<string, FieldAction> = {
    email: recording(log, 'email', reverse),
    ssn: recording(log, 'ssn', (v) => (v === null ? null : `T(${String(v)})`)),
    'e mail': recording(log, 'e mail', reverse),
    'customers.name': recording(log, 'customers.name', reverse),
    phone: recording(log, 'phone', (v) => v, (v) => typeof v === 'string' && v.includes('7')),
  };
  return {
    usesPaths,
    resolve(name, path) {
      resolved.add(`${name} ${String(path)}`);
      const byName = actions[name.toLowerCase()];
      if (byName !== undefined) return byName;
      return path === undefined ? undefined : actions[path.toLowerCase()];
    },
  };
}

const TEXTS = ["Jane O'Neil", 'jane@example.com', 'back\\slash', 'two\nlines', 'dq"x', '123-45-6789', '', 'Émile 💳', '%_like', '777-7777'];
const NUMBERS = ['0', '42', '3.14', '12345678901234567890', '007', '7'];
const ODD_NUMBERS = ['1e5', '0x1F', '.5', '1.', '0b101'];

/** A string literal in the dialect's spellings, plain or not. */
function stringLiteral(d: SqlDialect, text: string, form: number): string {
  const doubled = (q: string): string => `${q}${text.replaceAll(q, q + q)}${q}`;
  const backslashed = (q: string): string => `${q}${text.replaceAll('\\', '\\\\').replaceAll(q, '\\' + q).replaceAll('\n', '\\n')}${q}`;
  switch (form % 4) {
    case 0:
      return d.backslashEscapes ? (d.doubledQuoteEscape ? doubled("'").replaceAll('\\', '\\\\') : backslashed("'")) : doubled("'");
    case 1:
      return d.backslashEscapes ? backslashed("'") : doubled("'");
    case 2:
      return d.doubleQuoteIsString ? backslashed('"') : d.name === 'postgresql' ? `E${backslashed("'")}` : `N${doubled("'")}`;
    default:
      return d.dollarStrings && !text.includes('$') ? `$$${text}$$` : `X'4A61'`;
  }
}

function quotedName(d: SqlDialect, name: string, form: number): string {
  const forms: string[] = [name];
  if (d.backtickIdentifiers) forms.push(`\`${name}\``);
  if (!d.doubleQuoteIsString) forms.push(`"${name}"`);
  if (d.bracketIdentifiers) forms.push(`[${name}]`);
  return forms[form % forms.length];
}

const PLAIN_NAMES = ['id', 'name', 'email', 'ssn', 'phone', 'city', 'Email', 'SSN', 'note', 'e mail', 'status', 'x1'];
const ODD_NAMES = ['date', 'key', 'value', 'user', 'order', 'select', 'a"b', 'é', 'a$b', 'time', 'text', 'level'];

/** Scripts of 1–4 statements, mostly plain ones, with the near misses the parser must read. */
function corpusArb(d: SqlDialect): fc.Arbitrary<string> {
  const often = <T,>(usual: fc.Arbitrary<T>, rare: fc.Arbitrary<T>): fc.Arbitrary<T> => fc.oneof({ weight: 6, arbitrary: usual }, { weight: 1, arbitrary: rare });
  const name = often(
    fc.tuple(fc.constantFrom(...PLAIN_NAMES), fc.nat(3)).map(([n, f]) => (n === 'e mail' ? quotedName(d, n, Math.max(1, f)) : quotedName(d, n, f))),
    fc.tuple(fc.constantFrom(...ODD_NAMES), fc.nat(3)).map(([n, f]) => quotedName(d, n, f)),
  );
  const table = often(fc.constantFrom('customers', 'Customers', 'crm.customers', 'staging'), fc.constantFrom('order', 'a.b.c', 'customers c', '`x`'));
  const plainLiteral = fc.oneof(
    { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...TEXTS), fc.nat(1)).map(([t, f]) => stringLiteral(d, t, f)) },
    { weight: 3, arbitrary: fc.constantFrom(...NUMBERS) },
    { weight: 1, arbitrary: fc.constantFrom('NULL', 'TRUE', 'FALSE') },
  );
  const oddLiteral = fc.oneof(
    fc.tuple(fc.constantFrom(...TEXTS), fc.constantFrom(2, 3)).map(([t, f]) => stringLiteral(d, t, f)),
    fc.tuple(fc.constantFrom(...NUMBERS, ...ODD_NUMBERS), fc.constantFrom('-', '- ', '+')).map(([n, s]) => s + n),
    fc.constantFrom(...ODD_NUMBERS),
    fc.constantFrom('DEFAULT', '?', '$1', '@v', ":name", "LOWER('A')", "DATE '2020-01-01'", "'a' || 'b'", '1 + 1', "'x' COLLATE utf8_bin"),
  );
  const literal = often(plainLiteral, oddLiteral);
  const column = often(name, name.map((n) => `c.${n}`));
  const condition = often(
    fc.oneof(
      fc.tuple(column, fc.constantFrom('=', '<>', '!=', '<', '>=', '<='), literal).map(([c, op, l]) => `${c} ${op} ${l}`),
      fc.tuple(column, fc.boolean(), fc.array(literal, { minLength: 1, maxLength: 3 })).map(([c, not, ls]) => `${c} ${not ? 'NOT ' : ''}IN (${ls.join(', ')})`),
      fc.tuple(column, literal, literal).map(([c, lo, hi]) => `${c} BETWEEN ${lo} AND ${hi}`),
      fc.tuple(column, fc.boolean(), literal).map(([c, not, l]) => `${c} ${not ? 'NOT ' : ''}LIKE ${l}`),
      fc.tuple(column, fc.boolean()).map(([c, not]) => `${c} IS ${not ? 'NOT ' : ''}NULL`),
    ),
    fc.oneof(
      fc.tuple(column, literal).map(([c, l]) => `(${c} = ${l} OR ${c} IS NULL)`),
      fc.tuple(column, literal).map(([c, l]) => `${l} = ${c}`),
      fc.tuple(column, column).map(([a, b]) => `${a} = ${b}`),
      fc.tuple(column, literal).map(([c, l]) => `${c} == ${l}`),
      fc.tuple(column, literal).map(([c, l]) => `${c} LIKE ${l} ESCAPE '!'`),
      fc.tuple(column, literal).map(([c, l]) => `NOT ${c} = ${l}`),
    ),
  );
  const where = fc.oneof(
    fc.constant(''),
    fc.array(fc.tuple(condition, fc.constantFrom(' AND ', ' OR ')), { minLength: 1, maxLength: 3 }).map((cs) => ` WHERE ${cs.map(([c, j], k) => (k === 0 ? c : j + c)).join('')}`),
  );
  const twist = fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 4, arbitrary: fc.integer({ min: 1, max: 4 }) });
  const insert = fc
    .tuple(table, fc.uniqueArray(name, { minLength: 1, maxLength: 4, selector: (n) => n.replace(/[`"[\]]/g, '').toLowerCase() }), fc.integer({ min: 1, max: 3 }), fc.array(literal, { minLength: 12, maxLength: 12 }), twist)
    .map(([t, cols, rows, lits, tw]) => {
      const width = tw === 1 ? cols.length + 1 : cols.length;
      const values = Array.from({ length: rows }, (_, r) => `(${Array.from({ length: width }, (_, c) => lits[(r * width + c) % lits.length]).join(', ')})`);
      const head = tw === 2 ? `INSERT INTO ${t} VALUES ` : `INSERT INTO ${t} (${cols.join(', ')}) VALUES `;
      const tail = tw === 3 && d.executableComments ? ` ON DUPLICATE KEY UPDATE ${cols[0]} = ${lits[0]}` : tw === 3 && d.name === 'postgresql' ? ' RETURNING id' : tw === 4 ? ` ${'-- note'}\n` : '';
      return head + values.join(', ') + tail;
    });
  const update = fc
    .tuple(table, fc.array(fc.tuple(name, literal), { minLength: 1, maxLength: 3 }), where, twist)
    .map(([t, sets, w, tw]) => `UPDATE ${t}${tw === 1 ? ' AS c' : ''} SET ${sets.map(([c, l]) => `${tw === 2 ? 'c.' : ''}${c} = ${l}`).join(', ')}${w}`);
  const del = fc.tuple(table, where).map(([t, w]) => `DELETE FROM ${t}${w}`);
  const select = fc
    .tuple(fc.array(name, { minLength: 1, maxLength: 3 }), table, where, twist)
    .map(([cols, t, w, tw]) => `SELECT ${tw === 1 ? '*' : tw === 2 ? `${cols[0]} AS ssn` : tw === 3 ? `c.${cols[0]}` : cols.join(', ')} FROM ${t}${w}`);
  const statement = fc.oneof(insert, update, del, select);
  return fc.array(statement, { minLength: 1, maxLength: 4 }).map((sts) => sts.join(';\n') + ';');
}

describe('the token-level path and the full parser agree', () => {
  before(() => observeSqlReads(undefined));

  for (const name of SQL_DIALECTS) {
    it(`${name}: same statements, same output bytes, same values handed to the actions`, () => {
      const d = sqlDialect(name);
      let plain = 0;
      let scripts = 0;
      let statements = 0;
      fc.assert(
        fc.property(corpusArb(d), fc.boolean(), (sql, usesPaths) => {
          scripts++;
          const read = readsAlike({ sql, dialect: d, limits: DEFAULT_SQL_LIMITS });
          plain += read.plain;
          statements += read.statements;
          const logs: string[][] = [[], []];
          // Which columns are looked up (in any order: the parser's cross-check looks some up earlier).
          const resolved = [new Set<string>(), new Set<string>()];
          const outputs = (['auto', 'parser'] as const).map((route, k) =>
            outcome(() => protectSql(sql, resolverFor(logs[k], resolved[k], usesPaths), { sqlDialect: name }, DEFAULT_SQL_LIMITS, route)),
          );
          assert.deepEqual(outputs[0], outputs[1], sql);
          assert.deepEqual(logs[0], logs[1], sql);
          if (!('error' in outputs[0])) assert.deepEqual([...resolved[0]].sort(), [...resolved[1]].sort(), sql);
        }),
        { numRuns: 80, seed: 21 },
      );
      // The corpus must exercise the token path, not only the fallback.
      assert.ok(plain >= statements / 5, `${name}: only ${plain} plain statements of ${statements}`);
      assert.ok(statements - plain >= statements / 4, `${name}: only ${statements - plain} statements for the parser of ${statements}`);
    });
  }

  it('agrees where the parser decides what a statement is: empty statements, text T-SQL splits by its neighbours', () => {
    // Found by the fuzz targets (test/fuzz/fixtures/sql-mysql.json, sql-transactsql.json).
    for (const [name, sql] of [
      ['mysql', ";\nINSERT INTO customers (ssn) VALUES ('001-01-0001');"],
      ['mysql', "INSERT INTO customers (ssn) VALUES ('001-01-0001');;"],
      ['transactsql', "NSERT INTO customers (dateOfBirth) VALUES ('1970-01-01');\nUPDATE customers SET note = 'keep' WHERE id = 1;"],
    ] as const) {
      readsAlike({ sql, dialect: sqlDialect(name), limits: DEFAULT_SQL_LIMITS });
    }
  });

  it('the other SQL tests’ scripts read alike both ways', () => {
    const started = process.cpuUsage();
    assert.ok(recorded.size > 100, `only ${recorded.size} scripts recorded`);
    let plain = 0;
    for (const read of recorded.values()) plain += readsAlike(read).plain;
    const cpu = process.cpuUsage(started);
    console.log(`${recorded.size} scripts, ${plain} plain statements, ${((cpu.user + cpu.system) / 1e6).toFixed(2)} CPU s`);
    assert.ok(plain > 50, `only ${plain} plain statements among ${recorded.size} scripts`);
  });
});
