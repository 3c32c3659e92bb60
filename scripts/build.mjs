// Compiles src/ into dist/ with esbuild: one ES module bundle for the `dpg` command, split at every
// dynamic import() so a command or a door loads only what it uses (the gRPC stack, the token
// issuer, undici… each sit in their own chunk). Libraries are bundled too: fewer files to resolve
// and compile at start, and a smaller install (see docs/performance.md, "Build"). node-sql-parser
// stays outside: it is loaded per dialect at run time (src/formats/sql/parser.ts) and is large;
// koffi too: it loads its prebuilt native binary from its own package directory (transparent capture).
// New commands need nothing here: whatever src/cli/registry.ts reaches is bundled.
//
// `node scripts/build.mjs` (run by `npm run build`, `prepare` after `npm ci`, and before the tests).
import { build } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist');

/** Packages resolved from node_modules at run time instead of bundled (keep them in `dependencies`). */
export const EXTERNAL_PACKAGES = ['node-sql-parser', 'koffi'];

export async function buildDist({ quiet = false } = {}) {
  const started = performance.now();
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    // protect-worker: the protection worker's module, started by src/engine/worker-pool.ts from
    // dist/protect-worker.js (its engine code is shared with cli.js through chunks/).
    entryPoints: { cli: 'src/cli/main.ts', 'protect-worker': 'src/engine/protect-worker.ts' },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL_PACKAGES,
    chunkNames: 'chunks/[name]-[hash]',
    // CommonJS libraries in an ES module bundle still call require() for Node's built-ins.
    banner: { js: "import { createRequire as __dpgCreateRequire } from 'node:module'; const require = __dpgCreateRequire(import.meta.url);" },
    // Whitespace and syntax only: smaller sources parse faster and hold less memory; names stay
    // readable in stack traces.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    logLevel: quiet ? 'error' : 'warning',
  });
  writeFileSync(join(outdir, 'meta.json'), JSON.stringify(result.metafile));
  writeFileSync(join(outdir, 'THIRD-PARTY-NOTICES.txt'), thirdPartyNotices(result.metafile));
  if (!quiet) {
    const ms = Math.round(performance.now() - started);
    const files = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js')).length;
    console.log(`dist/: ${files} modules in ${ms} ms`);
  }
  return result.metafile;
}

/** The licence text of every package whose code went into the bundle (they travel with it). */
function thirdPartyNotices(metafile) {
  const packages = new Map();
  for (const input of Object.keys(metafile.inputs)) {
    const m = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (!m) continue;
    const dir = join(root, input.slice(0, m.index + m[0].length));
    if (!packages.has(m[1])) packages.set(m[1], dir);
  }
  const sections = [];
  for (const [name, dir] of [...packages].sort(([a], [b]) => a.localeCompare(b))) {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const licenseFile = ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'license', 'LICENCE', 'LICENSE-MIT'].map((f) => join(dir, f)).find((f) => existsSync(f));
    const text = licenseFile ? readFileSync(licenseFile, 'utf8').trim() : `(no licence file; package.json says ${pkg.license})`;
    sections.push(`${name}@${pkg.version} (${pkg.license}) — ${relative(root, dir)}\n\n${text}\n`);
  }
  return `Third-party code bundled into dist/ by scripts/build.mjs\n\n${sections.join('\n' + '-'.repeat(72) + '\n\n')}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  mkdirSync(outdir, { recursive: true });
  await buildDist();
}
