// proxy.transparent: off by default, on with the section or DPG_TRANSPARENT_ADDR, its defaults,
// and the problems it can have.

import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';

function withConfig(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-config-'));
  mkdirSync(join(dir, 'manifests'));
  writeFileSync(join(dir, 'manifests', 'm.yaml'), 'name: m\nfields:\n  - match: a\n    Mask: {}\n');
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, `manifests: manifests\n${yaml}`);
  return file;
}

describe('proxy.transparent config', () => {
  it('is off by default (the shipped config loads no transparent listener)', () => {
    const { config } = loadConfig({ file: 'config/gateway.yaml', env: {} });
    assert.equal(config!.proxy.transparent, undefined);
  });

  it('the section turns it on with the defaults', () => {
    const { config, problems } = loadConfig({ file: withConfig('proxy:\n  transparent: {}\n'), env: {} });
    assert.deepEqual(problems, []);
    assert.deepEqual(config!.proxy.transparent, {
      listen: { host: '127.0.0.1', port: 15006 },
      ipv6: true,
      peekTimeoutMs: 500,
      encryptedClientHello: 'refuse',
      inspect: 'routed',
    });
  });

  it('inspect: all from the file, DPG_TRANSPARENT_INSPECT over it; bad values are problems', () => {
    assert.equal(loadConfig({ file: withConfig('proxy:\n  transparent: { inspect: all }\n'), env: {} }).config!.proxy.transparent?.inspect, 'all');
    assert.equal(loadConfig({ file: withConfig('proxy:\n  transparent: { inspect: all }\n'), env: { DPG_TRANSPARENT_INSPECT: 'routed' } }).config!.proxy.transparent?.inspect, 'routed');
    assert.equal(loadConfig({ file: withConfig('proxy:\n  transparent: {}\n'), env: { DPG_TRANSPARENT_INSPECT: 'all' } }).config!.proxy.transparent?.inspect, 'all');
    const bad = loadConfig({ file: withConfig('proxy:\n  transparent: { inspect: everything }\n'), env: {} }).problems;
    assert.match(bad.map((p) => `${p.path}: ${p.message}`).join('\n'), /inspect: must be routed or all/);
    const badEnv = loadConfig({ file: withConfig('proxy:\n  transparent: {}\n'), env: { DPG_TRANSPARENT_INSPECT: 'strict' } }).problems;
    assert.match(badEnv.map((p) => `${p.file}: ${p.message}`).join('\n'), /DPG_TRANSPARENT_INSPECT: must be routed or all/);
  });

  it('DPG_TRANSPARENT_ADDR turns it on and sets the address', () => {
    const { config } = loadConfig({ file: 'config/gateway.yaml', env: { DPG_TRANSPARENT_ADDR: '127.0.0.1:15016' } });
    assert.deepEqual(config!.proxy.transparent?.listen, { host: '127.0.0.1', port: 15016 });
    assert.equal(config!.proxy.transparent?.ipv6, true);
  });

  it('enabled: false keeps it off; unknown keys and bad values are problems', () => {
    assert.equal(loadConfig({ file: withConfig('proxy:\n  transparent: { enabled: false }\n'), env: {} }).config!.proxy.transparent, undefined);
    const { problems } = loadConfig({ file: withConfig('proxy:\n  transparent: { listen: nowhere, encryptedClientHello: allow, peekTimout: 5 }\n'), env: {} });
    const text = problems.map((p) => `${p.path}: ${p.message}`).join('\n');
    assert.match(text, /transparent\.listen: must be host:port/);
    assert.match(text, /encryptedClientHello: must be refuse or splice/);
    assert.match(text, /peekTimout: unknown key/);
  });

  it('needs the proxy on', () => {
    const { problems } = loadConfig({ file: withConfig('proxy:\n  enabled: false\n  transparent: {}\n'), env: {} });
    assert.match(problems.map((p) => p.message).join('\n'), /needs proxy.enabled: true/);
  });
});
