// What the compiled build loads: every command module is reached from dist/cli.js, so heavy
// libraries must sit behind dynamic import()s. Read from the build's own metafile (dist/meta.json,
// written by scripts/build.mjs, which the test runner runs first): this checks what ships.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

interface Output {
  readonly entryPoint?: string;
  readonly inputs: Record<string, unknown>;
  readonly imports: readonly { readonly path: string; readonly kind: string }[];
}
const meta = JSON.parse(readFileSync('dist/meta.json', 'utf8')) as { outputs: Record<string, Output> };

/** Every source file evaluated when `start` is loaded, following static imports only. */
function staticallyLoaded(start: string): Set<string> {
  const seen = new Set<string>();
  const inputs = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file) || !meta.outputs[file]) return;
    seen.add(file);
    for (const input of Object.keys(meta.outputs[file].inputs)) inputs.add(input);
    for (const i of meta.outputs[file].imports) if (i.kind === 'import-statement') visit(i.path);
  };
  visit(start);
  return inputs;
}

function outputOf(source: string): string {
  const found = Object.entries(meta.outputs).find(([, o]) => o.entryPoint === source);
  assert.ok(found, `no chunk has ${source} as its entry (is it still imported dynamically?)`);
  return found[0];
}

const libraries = (inputs: Set<string>, names: readonly string[]) =>
  names.filter((name) => [...inputs].some((i) => i.includes(`node_modules/${name}/`)));

const HEAVY = ['@grpc/grpc-js', '@grpc/proto-loader', 'protobufjs', 'undici', 'jose', 'prom-client', '@peculiar/asn1-x509', 'busboy', 'pino', 'yaml'];

test('dpg --help, --version and every command module load none of the heavy libraries', () => {
  const cli = staticallyLoaded('dist/cli.js');
  assert.ok([...cli].some((i) => i.endsWith('src/cli/registry.ts')));
  assert.deepEqual(libraries(cli, HEAVY), []);
});

test('dpg probe loads the config reader only: no door, no identity, no metrics', () => {
  const probe = staticallyLoaded(outputOf('src/config/load.ts'));
  assert.deepEqual(libraries(probe, HEAVY), ['yaml']);
});

test('dpg serve loads each door, identity and metrics only when the config turns them on', () => {
  const main = staticallyLoaded(outputOf('src/main.ts'));
  assert.deepEqual(libraries(main, ['@grpc/grpc-js', 'undici', 'jose', 'prom-client', 'busboy']), []);
  const proxy = staticallyLoaded(outputOf('src/proxy/index.ts'));
  assert.deepEqual(libraries(proxy, ['@grpc/grpc-js', 'jose', 'prom-client', 'busboy', 'undici', 'protobufjs']), [], 'the sidecar profile (proxy only) loads no API door, undici only with the first upstream request, protobufjs only for gRPC routes');
  const admin = staticallyLoaded(outputOf('src/transport/http/admin-server.ts'));
  assert.deepEqual(libraries(admin, HEAVY), [], 'the admin listener is node:http only (the metrics registry is the caller\'s)');
  const grpc = staticallyLoaded(outputOf('src/transport/grpc/index.ts'));
  assert.deepEqual(libraries(grpc, ['undici', 'busboy']), []);
});

test('node-sql-parser stays outside the bundle (loaded per dialect at run time)', () => {
  const all = new Set(Object.values(meta.outputs).flatMap((o) => Object.keys(o.inputs)));
  assert.deepEqual(libraries(all, ['node-sql-parser']), []);
});
