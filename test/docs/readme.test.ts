// The README stays true: its links resolve, and its examples run as written — the command-line
// examples (outputs compared where the README shows them), the HTTP API calls against a real
// `dpg serve`, the proxy's CA download, and the transparent-capture walk-through (root only). The
// commands run as written, from the clone's root, on the example files the repository ships
// (examples/data/); only /tmp/… is moved into a scratch directory of this run, and `npx dpg` is run
// as `node bin/dpg.js` (what npx resolves to inside the clone, without npm's start-up).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readableCopy } from '../helpers/readable-copy.ts';
import { freePort } from '../helpers/free-port.ts';

const ROOT = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const BIN = join(ROOT, 'bin', 'dpg.js');

/** The ```sh blocks of the section whose heading starts with `heading`. */
function shBlocks(heading: string): string[] {
  const start = README.indexOf(`\n${heading}`);
  assert.notEqual(start, -1, `README has a section "${heading}"`);
  const next = README.slice(start + heading.length + 1).search(/\n#{2,3} /);
  const section = next === -1 ? README.slice(start) : README.slice(start, start + heading.length + 1 + next);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** Commands of a block: continuation lines joined, each with the `# …` output lines that follow it. */
function commandsOf(block: string): { command: string; expected: string | undefined }[] {
  const out: { command: string; expected: string | undefined }[] = [];
  let pending = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('# ') && out.length > 0 && pending === '') {
      out[out.length - 1]!.expected = line.slice(2).replace(/\s{2,}\(.*\)$/, '').trim();
      continue;
    }
    if (line.trim() === '') continue;
    pending += (pending ? '\n' : '') + line;
    if (!/\\\s*$/.test(line) && !/\|\s*$/.test(line)) {
      out.push({ command: pending, expected: undefined });
      pending = '';
    }
  }
  return out;
}

const scratch = mkdtempSync(join(tmpdir(), 'dpg-readme-'));
chmodSync(scratch, 0o755); // the capture walk-through runs the gateway as UID 10001
const env = { ...process.env, DPG_DATA_DIR: join(scratch, 'data'), DPG_LOG_LEVEL: 'silent' };

/** The README's command with its /tmp paths moved into the scratch directory. */
function localise(command: string, replacements: Record<string, string> = {}): string {
  // /tmp/ first: the clone itself may live under /tmp (CI's fresh clone does), and BIN must stay as it is.
  let c = command.replaceAll('/tmp/', `${scratch}/`).replaceAll('npx dpg ', `node ${BIN} `);
  for (const [from, to] of Object.entries(replacements)) c = c.replaceAll(from, to);
  return c;
}

function bash(script: string, extraEnv: Record<string, string> = {}, timeout = 180_000, cwd = ROOT) {
  return spawnSync('bash', ['-c', `set -euo pipefail\n${script}`], { cwd, encoding: 'utf8', env: { ...env, ...extraEnv }, timeout, input: 'a-secret\n' });
}

after(() => rmSync(scratch, { recursive: true, force: true }));

describe('README.md', () => {
  it('every relative link points at a file that exists', () => {
    for (const [, target] of README.matchAll(/\]\(((?!https?:|#)[^)#\s]+)(?:#[^)]*)?\)/g)) {
      assert.ok(existsSync(join(ROOT, target!)), target);
    }
  });

  it('every example file a command names is in the repository', () => {
    const named = [...README.matchAll(/(?:^|[\s=@'])((?:examples|config|proto|deploy)\/[\w./-]+\.(?:xml|sql|csv|json|yaml|proto|ts))\b/gm)].map((m) => m[1]!);
    assert.ok(named.includes('examples/data/customers.csv'), named.join(' '));
    // config/.dpg/ is the data directory the first run generates, not a file of the repository.
    for (const file of named.filter((f) => !f.includes('/.dpg/'))) assert.ok(existsSync(join(ROOT, file)), file);
  });

  it('the command-line examples run as written and print what the README shows', () => {
    const [block] = shBlocks('### Protect something from the command line');
    const commands = commandsOf(block!);
    assert.ok(commands.length >= 8, 'the section still has its examples');
    for (const { command, expected } of commands) {
      const r = bash(localise(command));
      assert.equal(r.status, 0, `${command}\n${r.stderr}`);
      if (expected !== undefined) assert.equal(r.stdout.trim(), expected, command);
    }
    const protectedCsv = readFileSync(join(scratch, 'customers-p.csv'), 'utf8');
    assert.ok(!protectedCsv.includes('4111 1111 1111 1111') && !protectedCsv.includes('jane.doe@'), 'the CSV example pseudonymised its file');
  });

  describe('with `npm start` running (dpg serve on the default config)', () => {
    let gateway: ChildProcess;
    const ports = { http: 0, grpc: 0, proxy: 0 };

    before(async () => {
      ports.http = await freePort();
      ports.grpc = await freePort();
      ports.proxy = await freePort();
      gateway = spawn(process.execPath, [BIN, 'serve'], {
        cwd: ROOT,
        stdio: 'ignore',
        env: { ...env, DPG_HTTP_ADDR: `127.0.0.1:${ports.http}`, DPG_GRPC_ADDR: `127.0.0.1:${ports.grpc}`, DPG_PROXY_ADDR: `127.0.0.1:${ports.proxy}` },
      });
      const end = Date.now() + 20_000;
      for (;;) {
        const ready = await fetch(`http://127.0.0.1:${ports.http}/readyz`).then((r) => r.status === 200, () => false);
        if (ready) break;
        if (Date.now() > end) throw new Error('dpg serve did not become ready');
        await new Promise((r) => setTimeout(r, 100));
      }
    });

    after(() => {
      gateway?.kill('SIGTERM');
    });

    const local = (command: string) =>
      localise(command, { '127.0.0.1:8080': `127.0.0.1:${ports.http}`, '127.0.0.1:9090': `127.0.0.1:${ports.grpc}`, '127.0.0.1:15001': `127.0.0.1:${ports.proxy}` });

    it('the HTTP API calls: a token, /api/protect as shown, /file/protect writes the protected CSV', () => {
      const [block] = shBlocks('### Call the HTTP API');
      const r = bash(local(block!));
      assert.equal(r.status, 0, r.stderr);
      const expected = /# (\{"dataSet".*)/.exec(block!)![1]!;
      const answer = JSON.parse(r.stdout.trim()) as Record<string, unknown>;
      const shown = JSON.parse(expected.replaceAll('"…"', '"x"').replace('{…}', '{}')) as Record<string, unknown>;
      assert.deepEqual(Object.keys(answer), Object.keys(shown));
      assert.deepEqual(answer.dataSet, shown.dataSet);
      const csv = readFileSync(join(scratch, 'customers-protected.csv'), 'utf8');
      assert.match(csv, /^name,email,cardNumber\r?\nJ\*\*\* D\*\*,j\*\*\*@example\.com,\*\*\*\* \*\*\*\* \*\*\*\* 1111/);
    });

    it('the curl examples of docs/http-api.md and docs/identity.md run as written, and a refused call fails the shell', () => {
      // One script: the token of the first block is used by the ones after it, as a reader would.
      const blocks = ['docs/http-api.md', 'docs/identity.md'].flatMap((doc) =>
        [...readFileSync(join(ROOT, doc), 'utf8').matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => b.includes('curl ')),
      );
      assert.ok(blocks.length >= 5, `found ${blocks.length} blocks`);
      rmSync(join(scratch, 'customers-protected.csv'), { force: true });
      const r = bash(local(blocks.join('\n')));
      assert.equal(r.status, 0, r.stderr);
      assert.match(readFileSync(join(scratch, 'customers-protected.csv'), 'utf8'), /^name,email,cardNumber\r?\nJ\*\*\* D\*\*,/);
      const [readme] = shBlocks('### Call the HTTP API');
      const fileCall = readme!.slice(readme!.indexOf('curl -s --fail-with-body http://127.0.0.1:8080/file/protect'));
      const refused = bash(local(fileCall), { TOKEN: 'not-a-token' });
      assert.notEqual(refused.status, 0, 'the /file/protect call with a bad token fails (curl --fail-with-body), not silently');
      assert.match(readFileSync(join(scratch, 'customers-protected.csv'), 'utf8'), /UNAUTHENTICATED/, 'the problem body is written for the reader');
    });

    it('the gateway CA download for proxy clients', () => {
      const [block] = shBlocks('### Protect outbound traffic with zero code changes');
      const download = block!.split('\n').find((l) => l.includes('/proxy/ca.pem'))!;
      const r = bash(local(download));
      assert.equal(r.status, 0, r.stderr);
      assert.match(readFileSync(join(scratch, 'dpg-ca.pem'), 'utf8'), /^-----BEGIN CERTIFICATE-----/);
    });
  });

  const canCapture =
    process.getuid?.() === 0 &&
    spawnSync('unshare', ['--net', '--mount', 'sh', '-c', 'command -v iptables && command -v setpriv'], { encoding: 'utf8' }).status === 0;
  it(
    'the transparent-capture walk-through runs as written (in a namespace of its own)',
    { skip: canCapture ? false : 'needs root, unshare, iptables and setpriv: the README capture walk-through is not run' },
    () => {
      const [block] = shBlocks('### Capture outbound traffic transparently');
      // The block's gateway runs as UID 10001, which may not read this checkout (a clone in a mode-0700
      // folder): the block runs in a readable copy of what `node bin/dpg.js serve` needs.
      const r = bash(localise(block!), {}, 90_000, readableCopy());
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      assert.ok(existsSync(join(scratch, 'dpg-trust', 'bundle.pem')), 'the trust bundle was written');
    },
  );
});
