// The proxy's config keys added for issue 8: defaults, otherContent, limits, and route hosts checked
// at load (an IP literal in any spelling is fine, a host that is no host is a problem with a line).

import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';

function withConfig(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-proxy-config-'));
  mkdirSync(join(dir, 'manifests'));
  writeFileSync(join(dir, 'manifests', 'm.yaml'), 'name: m\nfields:\n  - match: a\n    Mask: {}\n');
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, yaml);
  return file;
}

const routeYaml = (host: string, extra = '') =>
  ['proxy:', '  routes:', '    - name: r', `      match: { host: "${host}", path: "/v1/**" }`, '      request: { manifest: m, jobType: Mask }', extra, ''].join('\n');

test('defaults: idle timeout, connection cap, route host refresh; routes reject other content', () => {
  const { config, problems } = loadConfig({ file: withConfig(routeYaml('api.example')), env: {} });
  assert.deepEqual(problems, []);
  assert.equal(config!.proxy.idleTimeoutMs, 120_000);
  assert.equal(config!.proxy.maxConnections, 1024);
  assert.equal(config!.proxy.routeHostsRefreshMs, 60_000);
  assert.equal(config!.proxy.routes[0].otherContent, undefined);
});

test('otherContent: passthrough is read; anything else is a problem', () => {
  const ok = loadConfig({ file: withConfig(routeYaml('api.example', '      otherContent: passthrough')), env: {} });
  assert.equal(ok.config!.proxy.routes[0].otherContent, 'passthrough');
  const bad = loadConfig({ file: withConfig(routeYaml('api.example', '      otherContent: allow')), env: {} });
  assert.match(bad.problems.map((p) => `${p.path}: ${p.message}`).join('\n'), /otherContent: must be reject or passthrough/);
});

test('limits are read and checked', () => {
  const file = withConfig(['proxy:', '  idleTimeoutMs: 5000', '  maxConnections: 64', '  routeHostsRefreshMs: 30000', ''].join('\n'));
  const { config } = loadConfig({ file, env: {} });
  assert.equal(config!.proxy.idleTimeoutMs, 5000);
  assert.equal(config!.proxy.maxConnections, 64);
  assert.equal(config!.proxy.routeHostsRefreshMs, 30000);
  const bad = loadConfig({ file: withConfig(['proxy:', '  maxConnections: 0', ''].join('\n')), env: {} });
  assert.ok(bad.problems.some((p) => p.path === 'proxy.maxConnections'));
});

test('route hosts: names, wildcards and IP literals in any spelling load; a host that is no host is a problem', () => {
  for (const host of ['api.example', '*.partner.example', '*', '127.1', '0x7f000001', '[::ffff:127.0.0.1]', '::1', 'API.Example.']) {
    assert.deepEqual(loadConfig({ file: withConfig(routeYaml(host)), env: {} }).problems, [], host);
  }
  for (const host of ['api example', 'a/b', '[fe80::1%eth0]', '256.1.1.1', '*.']) {
    const { problems } = loadConfig({ file: withConfig(routeYaml(host)), env: {} });
    assert.ok(problems.some((p) => (p.path ?? '').endsWith('match.host') && p.line === 4), `${host}: ${JSON.stringify(problems)}`);
  }
});
