// dist/serve.cjs, the classic script `dpg serve` starts from with V8's code cache (bin/dpg.js,
// scripts/build.mjs; the test runner builds dist/ first): what the build put in it, that a start
// uses the cache, and that a cache that does not fit — another build's, or one V8 refuses — is
// never used while the start goes on as usual.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { crc32 } from 'node:zlib';

const SIDECAR = resolve('config/sidecar.yaml');
const KEYRING = `keys:\n  - id: default\n    versions:\n      - { version: 1, activeFrom: "2024-01-01T00:00:00Z", material: "${Buffer.alloc(32, 5).toString('base64')}" }\n`;
const dirs: string[] = [];
const temp = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Starts the sidecar profile from `bin` until `ready`, stops it; the `codeCache` its start-up line named, and its exit code. */
async function startOnce(bin: string, env: Record<string, string> = {}): Promise<{ codeCache: unknown; code: number | null }> {
  const child = spawn(process.execPath, [bin, 'serve', '--config', SIDECAR], {
    env: { ...process.env, DPG_DATA_DIR: temp('dpg-serve-script-'), DPG_PROXY_ADDR: '127.0.0.1:0', DPG_ADMIN_ADDR: '127.0.0.1:0', DPG_KEYRING: KEYRING, DPG_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let codeCache: unknown;
  await new Promise<void>((resolveReady, reject) => {
    let buffer = '';
    child.stdout!.on('data', (d: Buffer) => {
      buffer += d.toString('utf8');
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = JSON.parse(buffer.slice(0, nl)) as { msg?: string; codeCache?: unknown };
        buffer = buffer.slice(nl + 1);
        if (line.msg === 'starting') codeCache = line.codeCache;
        if (line.msg === 'ready') resolveReady();
      }
    });
    child.once('exit', (code) => reject(new Error(`dpg serve exited ${code} before ready`)));
  });
  child.kill('SIGTERM');
  const code = child.exitCode ?? (await new Promise<number | null>((r) => child.once('exit', r)));
  return { codeCache, code };
}

/** The libraries' files beside dist/serve.cjs (scripts/build.mjs, SERVE_BESIDE). */
const besideFiles = () => readdirSync('dist').filter((f) => /^serve-[a-z0-9-]+\.cjs$/.test(f));

/** bin/dpg.js and dist/serve.cjs (and the files beside it) copied to a directory of their own, with `cache` as the code cache. */
function copyWithCache(cache: Buffer): string {
  const root = temp('dpg-serve-copy-');
  mkdirSync(join(root, 'bin'));
  mkdirSync(join(root, 'dist'));
  copyFileSync('bin/dpg.js', join(root, 'bin/dpg.js'));
  for (const f of ['serve.cjs', ...besideFiles()]) copyFileSync(join('dist', f), join(root, 'dist', f));
  writeFileSync(join(root, 'dist/serve.cjs.cache'), cache);
  return join(root, 'bin/dpg.js');
}

describe('dist/serve.cjs and its code cache', () => {
  const script = readFileSync('dist/serve.cjs');
  const cache = readFileSync('dist/serve.cjs.cache');

  it('is ASCII (read as latin1, exact), has no import(), holds none of the libraries kept beside it and has a cache stamped with its length and CRC-32', () => {
    assert.equal(/[^\x00-\x7f]/.test(script.toString('latin1')), false);
    const meta = JSON.parse(readFileSync('dist/serve-meta.json', 'utf8')) as { inputs: Record<string, unknown> };
    const beside = /node_modules\/(undici|@grpc\/[^/]+|protobufjs|@peculiar\/[^/]+|asn1js|jose|busboy)\/|libphonenumber-js\/(metadata\.max|examples\.mobile)\.json/;
    assert.deepEqual(Object.keys(meta.inputs).filter((i) => !i.startsWith('serve-beside:') && beside.test(i)), [], 'in the script only as a one-line require of its file');
    assert.deepEqual(besideFiles().sort(), ['serve-busboy.cjs', 'serve-grpc.cjs', 'serve-jose.cjs', 'serve-phone-data.cjs', 'serve-undici.cjs', 'serve-x509.cjs']);
    assert.ok(script.length < 2_000_000, `dist/serve.cjs is ${script.length} bytes: its whole text stays in memory while dpg serve runs`);
    const text = script.toString('latin1');
    assert.doesNotMatch(text, /(?<![\w$.])import\(/, 'no dynamic import: a vm.Script would need the experimental loader for it');
    assert.match(text, /require\("\.\/serve-undici\.cjs"\)/);
    assert.equal(cache.readUInt32LE(0), script.length);
    assert.equal(cache.readUInt32LE(4), crc32(script));
    assert.ok(cache.length > 100_000, `a cache of ${cache.length} bytes`);
  });

  it('dpg serve starts with the cache; another build\'s cache is not read, one V8 refuses is ignored, and each start goes on', async () => {
    assert.deepEqual(await startOnce(resolve('bin/dpg.js')), { codeCache: 'used', code: 0 });
    const stale = Buffer.from(cache);
    stale.writeUInt32LE((stale.readUInt32LE(4) + 1) >>> 0, 4);
    assert.deepEqual(await startOnce(copyWithCache(stale)), { codeCache: 'none', code: 0 }, 'stamp of another script: not given to V8');
    const refused = Buffer.from(cache);
    for (let i = 8; i < 16; i++) refused[i] ^= 0xff; // V8's own header (magic number, version hash)
    assert.deepEqual(await startOnce(copyWithCache(refused)), { codeCache: 'rejected', code: 0 }, 'V8 refuses it and compiles');
    assert.deepEqual(await startOnce(resolve('bin/dpg.js'), { DPG_CODE_CACHE: 'off' }), { codeCache: 'off', code: 0 }, 'the ES module build');
  });

  it('the sidecar profile starts and stops reading none of the files beside the script (its CA already made)', async () => {
    const dataDir = temp('dpg-serve-beside-');
    const files = async () => {
      // A hook that names, as the process exits, every file the CommonJS loader read (the files beside dist/serve.cjs come through it).
      const hook = `data:text/javascript,${encodeURIComponent("import { createRequire } from 'node:module'; const r = createRequire(process.cwd() + '/'); process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify(Object.keys(r.cache)) + '\\n'));")}`;
      const child = spawn(process.execPath, ['--import', hook, resolve('bin/dpg.js'), 'serve', '--config', SIDECAR], {
        env: { ...process.env, DPG_DATA_DIR: dataDir, DPG_PROXY_ADDR: '127.0.0.1:0', DPG_ADMIN_ADDR: '127.0.0.1:0', DPG_KEYRING: KEYRING, DPG_LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
      await new Promise<void>((ready, reject) => {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString('utf8');
          if (out.includes('"msg":"ready"')) ready();
        });
        child.once('exit', (code) => reject(new Error(`dpg serve exited ${code} before ready: ${stderr.slice(0, 300)}`)));
      });
      child.kill('SIGTERM');
      const code = child.exitCode ?? (await new Promise<number | null>((r) => child.once('exit', r)));
      assert.equal(code, 0);
      const loaded = /LOADED (.*)/.exec(stderr);
      assert.ok(loaded, 'the hook reported');
      return (JSON.parse(loaded[1]!) as string[]).filter((f) => /[\\/]dist[\\/]serve-/.test(f)).map((f) => f.slice(f.lastIndexOf('serve-')));
    };
    assert.deepEqual(await files(), ['serve-x509.cjs'], 'the first start makes the CA: the certificate library is read');
    assert.deepEqual(await files(), [], 'every later start reads none of them');
  });
});
