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
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
  await buildServeScript(quiet);
  writeFileSync(join(outdir, 'THIRD-PARTY-NOTICES.txt'), thirdPartyNotices(result.metafile));
  if (!quiet) {
    const ms = Math.round(performance.now() - started);
    const files = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js')).length;
    console.log(`dist/: ${files} modules in ${ms} ms`);
  }
  return result.metafile;
}

/**
 * `dpg serve` as one classic script, dist/serve.cjs, which bin/dpg.js compiles with vm.Script and
 * V8's code cache (dist/serve.cjs.cache, made here by one warm start of the sidecar profile): on
 * Node 20 an ES module cannot be given a code cache, and compiling the bundle cold was most of the
 * start (docs/performance.md, "Start-up: a V8 code cache"). The same sources as dist/cli.js, in a
 * function expression `(function (exports, require, module, __filename, __dirname) { … })`, strict
 * like the ES module build. It holds no import(): a dynamic import from a vm.Script needs Node's
 * experimental loader hooks, so esbuild turns each into a require() — of a module in the script,
 * evaluated on first use as before, or of a file beside it (SERVE_BESIDE): the libraries the sidecar
 * profile never calls at start, read and compiled on their first use. The script's whole text stays
 * in memory for as long as the process runs (V8 compiles its functions from it when first called),
 * so what sits beside it is also memory an idle sidecar does not hold (docs/performance.md,
 * "Start-up and idle footprint").
 */
async function buildServeScript(quiet) {
  /** @type {Map<string, Set<string>>} file beside the script → the specifiers it holds */
  const used = new Map();
  const common = { absWorkingDir: root, outdir, outExtension: { '.js': '.cjs' }, bundle: true, format: 'cjs', platform: 'node', target: 'node20', minifyWhitespace: true, minifySyntax: true, legalComments: 'none', logLevel: quiet ? 'error' : 'warning' };
  const result = await build({
    ...common,
    entryPoints: { serve: 'src/cli/main.ts' },
    external: EXTERNAL_PACKAGES,
    supported: { 'dynamic-import': false },
    define: { 'import.meta.url': '__dpgModuleUrl' },
    banner: { js: "(function (exports, require, module, __filename, __dirname) {'use strict';const __dpgModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
    footer: { js: '})' },
    plugins: [serveBeside(used)],
    metafile: true,
  });
  writeFileSync(join(outdir, 'serve-meta.json'), JSON.stringify(result.metafile));
  for (const [file, specifiers] of used) {
    // One file per group: packages that use each other share one copy (protobufjs for grpc-js's loader and the gRPC routes).
    const contents = `module.exports = {${[...specifiers].sort().map((x) => `${JSON.stringify(x)}: require(${JSON.stringify(x)})`).join(', ')}};`;
    await build({ ...common, stdin: { contents, resolveDir: root, sourcefile: `${file}-entry.cjs` }, outfile: join(outdir, `${file}.cjs`), outdir: undefined, external: EXTERNAL_PACKAGES });
  }
  await writeServeCodeCache(quiet);
}

/**
 * Libraries kept out of dist/serve.cjs, by the file beside it that holds them: each is needed only
 * by a door, a route kind or a command the sidecar profile does not start with (the API doors'
 * tokens and uploads, gRPC, certificates, the phone metadata read on the first phone number).
 * Packages that use one another go in one file, so that one copy of each is ever loaded.
 */
const SERVE_BESIDE = {
  'serve-undici': [/^undici$/],
  'serve-grpc': [/^@grpc\//, /^protobufjs(\/|$)/],
  'serve-x509': [/^@peculiar\//, /^asn1js$/],
  'serve-jose': [/^jose$/],
  'serve-busboy': [/^busboy$/],
  'serve-phone-data': [/^libphonenumber-js\/(metadata\.max|examples\.mobile)\.json$/],
};

/**
 * In dist/serve.cjs, an import of a SERVE_BESIDE library becomes a module of one line,
 * `module.exports = require("./serve-grpc.cjs")["@grpc/grpc-js"]`, evaluated where the import was
 * (on first use, for a module reached by import()); `used` collects the specifiers each file must hold.
 */
function serveBeside(used) {
  return {
    name: 'serve-beside',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.namespace === 'serve-beside' || args.path.startsWith('.') || args.path.startsWith('node:')) return undefined;
        const file = Object.keys(SERVE_BESIDE).find((f) => SERVE_BESIDE[f].some((re) => re.test(args.path)));
        if (file === undefined) return undefined;
        if (!used.has(file)) used.set(file, new Set());
        used.get(file).add(args.path);
        return { path: `${file}:${args.path}`, namespace: 'serve-beside' };
      });
      b.onLoad({ filter: /.*/, namespace: 'serve-beside' }, (args) => {
        const [file, specifier] = [args.path.slice(0, args.path.indexOf(':')), args.path.slice(args.path.indexOf(':') + 1)];
        return { contents: `module.exports = require(${JSON.stringify(`./${file}.cjs`)})[${JSON.stringify(specifier)}];`, loader: 'js' };
      });
      b.onResolve({ filter: /^\.\/serve-[a-z0-9-]+\.cjs$/, namespace: 'serve-beside' }, (args) => ({ path: args.path, external: true }));
    },
  };
}

/**
 * dist/serve.cjs.cache: the sidecar profile (config/sidecar.yaml, ports 0, a throwaway data directory
 * and keyring) started twice until `ready`, then SIGTERM; bin/dpg.js writes the code cache as the
 * second process exits, with every function its start compiled. The first start only creates the
 * data directory's CA: recorded, the cache held the certificate library's creation code too, which
 * no later start of the same pod runs but every start would read and deserialize (1.64 MB against 1.36 MB).
 * Best effort: without it `dpg serve` only starts slower, so a failure here is a warning, never a
 * failed build.
 */
async function writeServeCodeCache(quiet) {
  const dataDir = mkdtempSync(join(tmpdir(), 'dpg-build-cache-'));
  const material = randomBytes(32).toString('base64');
  const out = join(outdir, 'serve.cjs.cache');
  try {
    const first = await warmStart(dataDir, material, {});
    const second = first.ok ? await warmStart(dataDir, material, { DPG_CODE_CACHE_OUT: out }) : first;
    if (!second.ok || !existsSync(out)) {
      console.warn(`build: no code cache for dist/serve.cjs (the warm start ${second.why}); dpg serve starts without it. ${second.stderr.slice(0, 500)}`);
    } else if (!quiet) {
      console.log(`dist/serve.cjs.cache: ${statSync(out).size} bytes`);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** One start of the sidecar profile from dist/serve.cjs until `ready`, then SIGTERM and its exit. */
async function warmStart(dataDir, material, env) {
  const child = spawn(process.execPath, [join(root, 'bin/dpg.js'), 'serve', '--config', join(root, 'config/sidecar.yaml')], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      DPG_CODE_CACHE: 'on',
      DPG_DATA_DIR: dataDir,
      DPG_PROXY_ADDR: '127.0.0.1:0',
      DPG_ADMIN_ADDR: '127.0.0.1:0',
      DPG_LOG_LEVEL: 'info',
      DPG_KEYRING: `keys:\n  - id: default\n    versions:\n      - { version: 1, activeFrom: "2024-01-01T00:00:00Z", material: "${material}" }\n`,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const ready = await new Promise((resolve) => {
    let out = '';
    const timer = setTimeout(() => resolve(false), 30_000);
    child.stdout.on('data', (d) => {
      out += d;
      if (/"msg":"ready"/.test(out)) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  child.kill('SIGTERM');
  const code = child.exitCode ?? (await new Promise((resolve) => child.once('exit', resolve)));
  return { ok: ready && code === 0, why: ready ? `exited ${code}` : 'never became ready', stderr };
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
