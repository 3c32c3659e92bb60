#!/usr/bin/env node
// Entry point of the `dpg` command: runs the compiled CLI in dist/ (built by `npm run build`, which
// `npm ci` runs through the `prepare` script). No TypeScript loader and no child process at run time.
// `dpg serve` starts from dist/serve.cjs with V8's code cache (below); every other command, and
// serve when that file is missing, from the ES module build dist/cli.js.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';
import { crc32 } from 'node:zlib';

const argv = process.argv.slice(2);
const main = (argv[0] === 'serve' && process.env.DPG_CODE_CACHE !== 'off' && serveScript()) || (await cliModule());
process.exitCode = await main(argv);

async function cliModule() {
  try {
    return (await import('../dist/cli.js')).main;
  } catch (err) {
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('dist')) throw err;
    process.stderr.write('dpg: the compiled build is missing (dist/cli.js): run `npm run build` in the project directory\n');
    process.exit(1);
  }
}

/**
 * dist/serve.cjs compiled with the code cache the build made for it (scripts/build.mjs): V8 then
 * reads the bytecode of every function the sidecar's start ran instead of compiling them again.
 * The cache file starts with the length and CRC-32 of the script it was made from: V8 itself
 * checks only its own version, its flags and the source's length, so a cache of another build
 * with the same length would otherwise be taken. A cache that does not match is not used, one V8
 * refuses is ignored, and the script is compiled as usual either way (Script#cachedDataRejected).
 * DPG_CODE_CACHE=off starts from dist/cli.js; DPG_CODE_CACHE_OUT=FILE writes a cache at exit.
 * Returns undefined when there is no dist/serve.cjs.
 */
function serveScript() {
  const file = fileURLToPath(new URL('../dist/serve.cjs', import.meta.url));
  let source;
  try {
    source = readFileSync(file);
  } catch {
    return undefined;
  }
  // What `serve` sets first (src/core/young-garbage.ts), set before compiling: V8's flags are part of
  // the cache's check, and the build's warm start made the cache with this one set.
  if (!process.execArgv.includes('--allocation-site-pretenuring')) setFlagsFromString('--no-allocation-site-pretenuring');
  const stamp = Buffer.alloc(8);
  stamp.writeUInt32LE(source.length, 0);
  stamp.writeUInt32LE(crc32(source), 4);
  let cachedData;
  try {
    const cache = readFileSync(`${file}.cache`);
    if (cache.subarray(0, 8).equals(stamp)) cachedData = cache.subarray(8);
  } catch {
    // no cache: compiled as usual
  }
  // esbuild writes ASCII only (non-ASCII escaped), so latin1 is the exact text and V8 keeps it one byte per character.
  const script = new Script(source.toString('latin1'), { filename: file, cachedData });
  globalThis[Symbol.for('dpg.codeCache')] = cachedData === undefined ? 'none' : script.cachedDataRejected ? 'rejected' : 'used';
  const out = process.env.DPG_CODE_CACHE_OUT;
  if (out) {
    process.once('exit', () => {
      // `serve` sets this one once ready (src/core/young-garbage.ts), after a start has compiled: back to V8's default first.
      setFlagsFromString('--semi-space-growth-factor=2');
      writeFileSync(`${out}.tmp`, Buffer.concat([stamp, script.createCachedData()]));
      renameSync(`${out}.tmp`, out);
    });
  }
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, fileURLToPath(new URL('../dist', import.meta.url)));
  return module.exports.main;
}
