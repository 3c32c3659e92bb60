// Config loading: defaults, unknown keys, wrong types and missing files reported with file and line;
// environment overrides.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultWorkers, loadConfig, parseListenAddress } from '../../src/config/load.ts';

function withConfig(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-config-'));
  mkdirSync(join(dir, 'manifests'));
  writeFileSync(join(dir, 'manifests', 'm.yaml'), 'name: m\nfields:\n  - match: a\n    Mask: {}\n');
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, yaml);
  return file;
}

describe('config loader', () => {
  it('loads the shipped default config', () => {
    const { config, problems } = loadConfig({ file: 'config/gateway.yaml', env: {} });
    assert.deepEqual(problems, []);
    assert.deepEqual(config!.http.listen, { host: '127.0.0.1', port: 8080 });
    assert.deepEqual(config!.grpc.listen, { host: '127.0.0.1', port: 9090 });
    assert.deepEqual(config!.proxy.listen, { host: '127.0.0.1', port: 15001 });
    assert.equal(config!.http.requireTokenForFileProtect, true);
    assert.equal(config!.identity.clients.length, 2);
  });

  it('reads a client\'s pseudonymScope: id lists or "*", organizationWide; absent means none given', () => {
    const { config: shipped } = loadConfig({ file: 'config/gateway.yaml', env: {} });
    assert.deepEqual(shipped!.identity.clients[0].pseudonymScope, { thirdPartyIds: '*', dataUsageIds: '*', organizationWide: true });
    assert.equal(shipped!.identity.clients[1].pseudonymScope, undefined);
    const client = (scope: string) =>
      withConfig(`identity:\n  clients:\n    - id: p\n      secretHash: "scrypt$x"\n      scopes: [protect]\n      pseudonymScope: ${scope}\n`);
    const { config } = loadConfig({ file: client('{ thirdPartyIds: [7, 0], organizationWide: false }'), env: {} });
    assert.deepEqual(config!.identity.clients[0].pseudonymScope, { thirdPartyIds: [7, 0], dataUsageIds: [0], organizationWide: false });
    for (const bad of ['{ thirdPartyIds: 7 }', '{ dataUsageIds: [-1] }', '{ organizationWide: maybe }', '{ partner: 7 }']) {
      const { problems } = loadConfig({ file: client(bad), env: {} });
      assert.ok(problems.length > 0 && problems.every((p) => p.line === 6), bad);
    }
  });

  it('DPG_KEYRING_FILE replaces the keyring source; DPG_CONFIG_BASE is what relative paths resolve against (an injected pod)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-envpaths-'));
    writeFileSync(join(dir, 'keyring.yaml'), 'x', { mode: 0o600 });
    mkdirSync(join(dir, 'manifests'));
    const { config, problems } = loadConfig({ file: 'config/sidecar.yaml', env: { DPG_KEYRING_FILE: join(dir, 'keyring.yaml'), DPG_CONFIG_BASE: dir } });
    assert.deepEqual(problems, []);
    assert.deepEqual(config!.keys, { source: 'file', file: join(dir, 'keyring.yaml') });
    assert.equal(config!.manifests, join(dir, 'manifests'));
    const missing = loadConfig({ file: 'config/sidecar.yaml', env: { DPG_KEYRING_FILE: join(dir, 'none.yaml') } });
    assert.deepEqual(missing.problems.map((p) => p.file), ['environment DPG_KEYRING_FILE']);
  });

  it('limits.workers: defaults from the core count; each key validated with its line', () => {
    const shipped = loadConfig({ file: 'config/gateway.yaml', env: {} }).config!.limits.workers!;
    assert.deepEqual(shipped, defaultWorkers());
    assert.deepEqual(defaultWorkers(2), { max: 1, inlineBytes: 32768, timeoutMs: 120000, idleMs: 30000, nice: 10 }, 'one worker on 2 cores');
    assert.equal(defaultWorkers(1).max, 1);
    assert.equal(defaultWorkers(16).max, 2);
    const set = loadConfig({ file: withConfig('limits:\n  workers: { max: 0, inlineBytes: 1024, timeoutMs: 500, idleMs: 0, nice: 0 }\n'), env: {} });
    assert.deepEqual(set.problems, []);
    assert.deepEqual(set.config!.limits.workers, { max: 0, inlineBytes: 1024, timeoutMs: 500, idleMs: 0, nice: 0 });
    const bad = loadConfig({ file: withConfig('limits:\n  workers:\n    max: -1\n    timeoutMs: 5\n    idleMs: soon\n    threads: 4\n    nice: 20\n'), env: {} });
    assert.deepEqual(
      bad.problems.map((p) => `${p.line} ${p.path}`).sort(),
      ['3 limits.workers.max', '4 limits.workers.timeoutMs', '5 limits.workers.idleMs', '6 limits.workers.threads', '7 limits.workers.nice'].sort(),
    );
  });

  it('admin.listen: off by default; host:port, off or false in the file; DPG_ADMIN_ADDR (host:port or off) wins', () => {
    assert.equal(loadConfig({ file: 'config/gateway.yaml', env: {} }).config!.admin, undefined, 'the default config has none');
    const sidecar = loadConfig({ file: 'config/sidecar.yaml', env: {} });
    assert.deepEqual(sidecar.problems, []);
    assert.deepEqual(sidecar.config!.admin, { listen: { host: '127.0.0.1', port: 15020 } }, 'the sidecar profile: loopback, like Istio');
    assert.deepEqual(sidecar.config!.keys, { source: 'env', env: 'DPG_KEYRING' }, 'the sidecar profile reads DPG_KEYRING');
    assert.equal(loadConfig({ file: 'config/sidecar.yaml', env: { DPG_ADMIN_ADDR: 'off' } }).config!.admin, undefined);
    assert.deepEqual(loadConfig({ file: 'config/gateway.yaml', env: { DPG_ADMIN_ADDR: '[::1]:0' } }).config!.admin, { listen: { host: '::1', port: 0 } });
    for (const off of ['off', 'OFF', 'false']) assert.equal(loadConfig({ file: withConfig(`admin:\n  listen: ${off}\n`), env: {} }).config!.admin, undefined, off);
    assert.deepEqual(loadConfig({ file: withConfig('admin:\n  listen: 0.0.0.0:15020\n'), env: {} }).config!.admin, { listen: { host: '0.0.0.0', port: 15020 } });
    const bad = loadConfig({ file: withConfig('admin:\n  listen: 15020\n  bind: x\n'), env: { DPG_ADMIN_ADDR: 'nope' } });
    assert.deepEqual(
      bad.problems.map((p) => `${p.line ?? '-'} ${p.path ?? p.file} ${p.message}`).sort(),
      [
        '- environment DPG_ADMIN_ADDR must be host:port (e.g. 127.0.0.1:15020) or off',
        '2 admin.listen must be host:port (e.g. 127.0.0.1:15020) or off',
        '3 admin.bind unknown key (expected one of: listen)',
      ],
    );
  });

  it('applies environment overrides', () => {
    const { config } = loadConfig({
      file: 'config/gateway.yaml',
      env: { DPG_HTTP_ADDR: '127.0.0.1:0', DPG_GRPC_ADDR: '[::1]:0', DPG_PROXY_ADDR: ':0', DPG_DATA_DIR: '/tmp/dpg-x', DPG_LOG_LEVEL: 'warn' },
    });
    assert.deepEqual(config!.http.listen, { host: '127.0.0.1', port: 0 });
    assert.deepEqual(config!.grpc.listen, { host: '::1', port: 0 });
    assert.equal(config!.proxy.listen.port, 0);
    assert.equal(config!.dataDir, '/tmp/dpg-x');
    assert.equal(config!.logging.level, 'warn');
  });

  it('reports unknown keys, wrong types and missing files with file and line, all at once', () => {
    const file = withConfig(['http:', '  listen: 127.0.0.1:8080', '  maxBodyBytes: lots', 'grcp: {}', 'keys:', '  source: file', '  file: nowhere.yaml', 'logging:', '  level: loud', ''].join('\n'));
    const { config, problems } = loadConfig({ file, env: {} });
    assert.equal(config, undefined);
    const text = problems.map((p) => `${p.line}:${p.path}:${p.message}`);
    assert.ok(text.some((t) => t.startsWith('3:http.maxBodyBytes:must be a number')), text.join('\n'));
    assert.ok(text.some((t) => t.startsWith('4:grcp:unknown key')), text.join('\n'));
    assert.ok(text.some((t) => t.startsWith('7:keys.file:file not found')), text.join('\n'));
    assert.ok(text.some((t) => t.startsWith('9:logging.level:must be one of')), text.join('\n'));
    assert.ok(problems.every((p) => p.file === file));
  });

  it('reports YAML syntax errors and a bad environment address', () => {
    const file = withConfig('http: [unclosed\n');
    assert.match(loadConfig({ file, env: {} }).problems[0]!.message, /YAML syntax/);
    const bad = loadConfig({ file: 'config/gateway.yaml', env: { DPG_HTTP_ADDR: 'nonsense' } });
    assert.equal(bad.config, undefined);
    assert.match(bad.problems[0]!.file, /DPG_HTTP_ADDR/);
  });

  it('reports a missing config file', () => {
    const { problems } = loadConfig({ file: '/nonexistent/gateway.yaml', env: {} });
    assert.equal(problems[0]!.message, 'file not found');
  });

  it('parses listen addresses', () => {
    assert.deepEqual(parseListenAddress('0.0.0.0:1'), { host: '0.0.0.0', port: 1 });
    assert.deepEqual(parseListenAddress('[::1]:9090'), { host: '::1', port: 9090 });
    assert.equal(parseListenAddress('host'), undefined);
    assert.equal(parseListenAddress('h:99999'), undefined);
  });
  it('reads a route\'s match.pathMatch (lenient or exact) and a phase\'s LIST delimiter; anything else is a problem', () => {
    const routes = (pathMatch: string, delimiter: string) =>
      ['keys:', '  source: generated', 'manifests: manifests', 'proxy:', '  enabled: true', '  routes:', '    - name: r', '      match:', '        path: /v1/**', `        pathMatch: ${pathMatch}`, '      request:', '        manifest: m', '        jobType: Mask', `        delimiter: ${delimiter}`, ''].join('\n');
    const ok = loadConfig({ file: withConfig(routes('exact', '";"')), env: {} });
    assert.deepEqual(ok.problems, []);
    assert.equal(ok.config?.proxy.routes[0]?.match.pathMatch, 'exact');
    assert.equal(ok.config?.proxy.routes[0]?.request?.delimiter, ';');
    const tab = loadConfig({ file: withConfig(routes('lenient', '"\\t"')), env: {} });
    assert.equal(tab.config?.proxy.routes[0]?.request?.delimiter, '\t');
    const bad = loadConfig({ file: withConfig(routes('caseless', '"::"')), env: {} });
    assert.equal(bad.config, undefined);
    const text = bad.problems.map((p) => `${p.path}:${p.message}`);
    assert.ok(text.some((t) => /pathMatch:must be lenient or exact/.test(t)), text.join('\n'));
    assert.ok(text.some((t) => /delimiter:must be one of/.test(t)), text.join('\n'));
  });
});
