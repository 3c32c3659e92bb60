// A gRPC route from the config file to its compiled phases: the `grpc` block's files checked at load
// (file and line), the methods and types read when the routes are compiled.

import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../../src/config/load.ts';
import { compileRouteSet } from '../../../src/proxy/index.ts';
import { testEngine } from '../../helpers/engine.ts';
import { FIXTURES, PUT, frame, runCall, shopRoot, unframe } from './helpers.ts';

/** A config directory holding the test protos under protos/, and gateway.yaml with these routes. */
function configWith(routes: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-grpc-config-'));
  cpSync(FIXTURES, join(dir, 'protos'), { recursive: true });
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, ['manifests: protos/manifests', 'proxy:', '  routes:', routes, ''].join('\n'));
  return file;
}

const ROUTE = [
  '    - name: shop',
  '      match: { host: api.shop.example, path: /shop.v1.Customers/* }',
  '      grpc:',
  '        protoFiles: [protos/shop.proto]',
  '        includeDirs: [protos/include]',
  '      request: { manifest: grpc-test, jobType: Mask }',
  '      response: { manifest: grpc-test, jobType: Mask }',
].join('\n');

test('a gRPC route loads with its paths resolved and compiles to phases that protect messages', async () => {
  const file = configWith(ROUTE);
  const { config, problems } = loadConfig({ file, env: {} });
  assert.deepEqual(problems, []);
  const route = config!.proxy.routes[0]!;
  assert.deepEqual(route.grpc, { protoFiles: [join(file, '../protos/shop.proto')], includeDirs: [join(file, '../protos/include')] });
  const set = compileRouteSet(config!.proxy.routes, testEngine(join(FIXTURES, 'manifests')));
  const phases = [...set.phases.values()][0]!;
  assert.ok(phases.request?.grpc && phases.response?.grpc);
  const Customer = shopRoot().lookupType('shop.v1.Customer');
  const bytes = Buffer.from(Customer.encode(Customer.fromObject({ cards: [{ card_number: '4111 1111 1111 1111' }] })).finish());
  const { out } = await runCall(phases.request.grpc, frame(bytes), { path: PUT });
  assert.deepEqual(Customer.toObject(Customer.decode(unframe(out)[0]!.message)), { cards: [{ card_number: '**** **** **** 1111' }] });
});

test('config problems of the grpc block carry file and line; a path matching no method stops the start', () => {
  const missing = configWith(ROUTE.replace('protos/shop.proto', 'protos/nope.proto'));
  const m = loadConfig({ file: missing, env: {} });
  assert.equal(m.config, undefined);
  assert.deepEqual(m.problems.map((p) => [p.line, p.path, p.message.replace(/: .*/, '')]), [[7, 'proxy.routes[0].grpc.protoFiles[0]', 'file not found']]);

  const both = loadConfig({ file: configWith(ROUTE.replace('includeDirs: [protos/include]', 'descriptorSet: protos/shop.proto')), env: {} });
  assert.deepEqual(both.problems.map((p) => [p.path, p.message]), [['proxy.routes[0].grpc.descriptorSet', 'give protoFiles or descriptorSet, not both']]);

  const setWithDirs = loadConfig({ file: configWith(ROUTE.replace('protoFiles: [protos/shop.proto]', 'descriptorSet: protos/shop.proto')), env: {} });
  assert.deepEqual(setWithDirs.problems.map((p) => [p.line, p.path, p.message]), [[8, 'proxy.routes[0].grpc.includeDirs', 'is for protoFiles; a descriptor set holds its imports']]);

  const neither = loadConfig({ file: configWith(ROUTE.replace('protoFiles: [protos/shop.proto]', 'includeDirs: [protos]').replace('        includeDirs: [protos/include]\n', '')), env: {} });
  assert.ok(neither.problems.some((p) => p.path === 'proxy.routes[0].grpc' && /needs protoFiles or descriptorSet/.test(p.message)), JSON.stringify(neither.problems));

  const { config } = loadConfig({ file: configWith(ROUTE.replace('/shop.v1.Customers/*', '/shop.v1.Orders/*')), env: {} });
  assert.throws(() => compileRouteSet(config!.proxy.routes, testEngine(join(FIXTURES, 'manifests'))), /^StartupError: proxy\.routes\[shop\]\.grpc: match\.path matches none of the 2 method\(s\)/);
});
