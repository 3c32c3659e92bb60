// SQL codec throughput: protect of a realistic 1,000-statement script (INSERT and UPDATE … WHERE),
// on the token-level path (plain statements read without the parser, the default) and with every
// statement read by node-sql-parser (the path before issue 21), in alternating rounds of the same
// run, in MB per CPU-second of this process; then node-sql-parser's own astify + sqlify.
// Run: node --import ./scripts/ts-loader.mjs bench/sql.bench.ts   (BENCH_MS sets the time per figure)

import { createRequire } from 'node:module';
import type { Scalar } from '../src/core/types.ts';
import type { FieldAction, FieldResolver } from '../src/formats/codec.ts';
import { protectSql } from '../src/formats/sql/index.ts';
import { DEFAULT_SQL_LIMITS, type SqlRoute } from '../src/formats/sql/script.ts';
import { readFileSync } from 'node:fs';
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

/** CPU seconds (user + system, this process) per protect of the script on one route. */
function cpuPerScript(route: SqlRoute, budgetMs: number): number {
  const start = process.cpuUsage();
  let runs = 0;
  for (;;) {
    protectSql(sql, resolver, {}, DEFAULT_SQL_LIMITS, route);
    runs++;
    const used = process.cpuUsage(start);
    if ((used.user + used.system) / 1000 >= budgetMs) return (used.user + used.system) / 1e6 / runs;
  }
}

const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
for (let k = 0; k < 3; k++) {
  protectSql(sql, resolver, {}, DEFAULT_SQL_LIMITS, 'parser');
  protectSql(sql, resolver, {}, DEFAULT_SQL_LIMITS, 'auto');
}
// Alternating rounds, so both routes see the same load on a shared machine.
const rounds = 4;
const cpu: Record<SqlRoute, number[]> = { auto: [], parser: [] };
for (let r = 0; r < rounds; r++) {
  cpu.parser.push(cpuPerScript('parser', budget / (2 * rounds)));
  cpu.auto.push(cpuPerScript('auto', budget / (2 * rounds)));
}
const mb = sql.length / 1e6;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [route, label] of [['parser', 'full parser for every statement (before issue 21)'], ['auto', 'token-level path for plain statements (default)']] as const) {
  const seconds = median(cpu[route]);
  console.log(`${label.padEnd(52)} ${(seconds * 1000).toFixed(1).padStart(7)} CPU ms/script  ${(mb / seconds).toFixed(2).padStart(6)} MB per CPU-second  ${(statements / seconds).toFixed(0).padStart(7)} statements per CPU-second`);
}
console.log(`token path ÷ full parser: ${(median(cpu.parser) / median(cpu.auto)).toFixed(2)}×   load average before: ${loadBefore}, after: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
// Issue 21's goal, on the default (token-level) path. CPU time inflates on a loaded machine (shared
// cores and caches): the figure that counts is a quiet run's; the parser route above is the same-run baseline.
const GOAL_MB_PER_CPU_SECOND = 10;
const figure = mb / median(cpu.auto);
console.log(
  `goal: ≥ ${GOAL_MB_PER_CPU_SECOND} MB per CPU-second on the token-level path — ${figure >= GOAL_MB_PER_CPU_SECOND ? 'MET' : 'NOT MET'} (${figure.toFixed(2)} MB per CPU-second; full parser ${(mb / median(cpu.parser)).toFixed(2)} in the same run)`,
);

const { Parser } = createRequire(import.meta.url)('node-sql-parser/build/mysql.js') as {
  Parser: new () => { astify(s: string, o: object): unknown; sqlify(a: unknown, o: object): string };
};
const parser = new Parser();
const baseline = measure('reference: node-sql-parser astify + sqlify (wall)', budget / 4, statements, () =>
  parser.sqlify(parser.astify(sql, { database: 'mysql' }), { database: 'mysql' }),
);
const ours = measure('sqlCodec protect, default path (wall)', budget / 4, statements, () => protectSql(sql, resolver, {}));
console.log(`protect costs ${(ours / baseline).toFixed(2)}× the parser's own astify + sqlify`);
