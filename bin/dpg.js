#!/usr/bin/env node
// Entry point of the `dpg` command: runs the compiled CLI in dist/ (built by `npm run build`, which
// `npm ci` runs through the `prepare` script). No TypeScript loader and no child process at run time.
let cli;
try {
  cli = await import('../dist/cli.js');
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('dist')) throw err;
  process.stderr.write('dpg: the compiled build is missing (dist/cli.js): run `npm run build` in the project directory\n');
  process.exit(1);
}
process.exitCode = await cli.main(process.argv.slice(2));
