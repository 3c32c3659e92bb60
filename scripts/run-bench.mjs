// Runs every benchmark in bench/ (or those whose names contain an argument), one process each, so
// one benchmark's heap and JIT state never colours the next. Never part of `npm test`.
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const filter = process.argv.slice(2);
const files = readdirSync('bench')
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filter.length === 0 || filter.some((p) => f.includes(p)))
  .sort();
let failed = 0;
for (const file of files) {
  console.log(`\n=== bench/${file} (${new Date().toISOString()}) ===`);
  const r = spawnSync(process.execPath, ['--import', './scripts/ts-loader.mjs', `bench/${file}`], { stdio: 'inherit', env: { ...process.env, DPG_LOG_LEVEL: 'silent' } });
  if (r.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
