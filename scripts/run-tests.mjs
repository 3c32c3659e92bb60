// Runs every test file under test/ with Node's built-in test runner (scripts/ts-loader.mjs loads TypeScript).
// Node 20's runner takes no glob patterns, so the files are listed here. dist/ is rebuilt first: the
// tests that run `dpg` as a process run the compiled build, so they exercise what ships.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { buildDist } from './build.mjs';

function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...collect(full));
    else if (name.endsWith('.test.ts')) out.push(full);
  }
  return out;
}

await buildDist({ quiet: true });
const filter = process.argv.slice(2);
const files = collect('test').filter((f) => filter.length === 0 || filter.some((p) => f.includes(p)));
const result = spawnSync(process.execPath, ['--import', './scripts/ts-loader.mjs', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
  env: { ...process.env, DPG_LOG_LEVEL: process.env.DPG_LOG_LEVEL ?? 'silent' },
});
process.exit(result.status ?? 1);
