// SQL codec throughput: protect of a realistic 1,000-statement script (INSERT and UPDATE … WHERE),
// next to node-sql-parser's own astify + sqlify of the same script (the parse we cannot avoid).
// Run: node --import ./scripts/ts-loader.mjs bench/sql.bench.ts

import { createRequire } from 'node:module';
import type { Scalar } from '../src/core/types.ts';
import type { FieldAction, FieldResolver } from '../src/formats/codec.ts';
import { protectSql } from '../src/formats/sql/index.ts';
import { timeLoop } from './timing.ts';

const mask: FieldAction = {
  removes: () => false,
  apply: (value: Scalar) => (value === null ? null : '*'.repeat(Math.max(0, String(value).length - 4)) + String(value).slice(-4)),
  applyBatch(values: Scalar[]) {
    return values.map((v) => this.apply(v, ''));
  },
};
const protectedNames = new Set(['email', 'cardnumber', 'ssn']);
const resolver: FieldResolver = { usesPaths: false, resolve: (name) => (protectedNames.has(name.toLowerCase()) ? mask : undefined) };

function buildScript(statements: number): string {
  const parts: string[] = [];
  for (let i = 0; i < statements; i++) {
    if (i % 2 === 0) {
      parts.push(
        `INSERT INTO customers (id, name, email, cardNumber, ssn, city) VALUES ` +
          `(${i}, 'Customer ${i} O''Brien', 'c${i}@example.com', '4111 1111 1111 ${String(i % 10000).padStart(4, '0')}', '123-45-${String(i % 10000).padStart(4, '0')}', 'Springfield'), ` +
          `(${i + 1}, 'Other ${i}', 'o${i}@example.com', '5555 5555 5555 4444', '987-65-4321', 'Shelbyville');`,
      );
    } else {
      parts.push(`UPDATE customers SET email = 'new${i}@example.com', city = 'Capital' WHERE id = ${i} AND ssn IN ('123-45-6789', '987-65-4321');`);
    }
  }
  return parts.join('\n');
}

function measure(label: string, budgetMs: number, statements: number, run: () => unknown): number {
  const { perOpMs, perSecond } = timeLoop(run, budgetMs, 2);
  console.log(`${label.padEnd(52)} ${perOpMs.toFixed(1).padStart(8)} ms/script  ${(statements * perSecond).toFixed(0).padStart(7)} statements/s`);
  return perOpMs;
}

const statements = 1000;
const sql = buildScript(statements);
console.log(`script: ${(sql.length / 1024).toFixed(0)} KiB, ${statements} statements (500 two-row INSERTs, 500 UPDATE … WHERE … IN)`);
const budget = Number(process.env.BENCH_MS ?? 8000);

const { Parser } = createRequire(import.meta.url)('node-sql-parser/build/mysql.js') as {
  Parser: new () => { astify(s: string, o: object): unknown; sqlify(a: unknown, o: object): string };
};
const parser = new Parser();
const baseline = measure('baseline: node-sql-parser astify + sqlify', budget, statements, () =>
  parser.sqlify(parser.astify(sql, { database: 'mysql' }), { database: 'mysql' }),
);
const ours = measure('sqlCodec protect (tokenize + parse + splice)', budget, statements, () => protectSql(sql, resolver, {}));
console.log(`protect costs ${(ours / baseline).toFixed(2)}× the parser's own astify + sqlify`);
