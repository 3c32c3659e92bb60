// The JSON Schemas in schema/ are the contract editors and the loaders share: the generated
// validators and docs/configuration.md are current, every shipped and documented config and
// manifest validates, a typo in any section is reported with its line, and the schema and the
// loader's types (src/config/types.ts) name the same keys.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import ts from 'typescript';
import { loadConfig } from '../../src/config/load.ts';
import { parseManifestText } from '../../src/manifest/parse.ts';
import { parseYaml } from '../../src/core/yaml-reader.ts';
import { checkAgainstSchema, plainForSchema } from '../../src/core/schema-problems.ts';
import validateGateway, { schema as gatewaySchema } from '../../src/config/gateway-schema.generated.js';
import validateManifest, { schema as manifestSchema } from '../../src/manifest/manifest-schema.generated.js';
import { generatedFiles } from '../../scripts/schema-build.mjs';

const ROOT = resolve(import.meta.dirname, '..', '..');
type Schema = Record<string, any>;

function withConfig(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-schema-'));
  mkdirSync(join(dir, 'manifests'));
  writeFileSync(join(dir, 'manifests', 'm.yaml'), 'name: m\nfields:\n  - match: a\n    Mask: {}\n');
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, yaml);
  return file;
}

/** Schema problems of a YAML text (no file checks): `line path: message`. */
function schemaProblems(text: string, kind: 'gateway' | 'manifest'): string[] {
  const { root, sink } = parseYaml(text, 'x.yaml');
  const [validate, schema] = kind === 'gateway' ? [validateGateway, gatewaySchema] : [validateManifest, manifestSchema];
  checkAgainstSchema(validate, schema, plainForSchema(root.node), root.node, sink);
  return sink.problems.map((p) => `${p.line} ${p.path ?? ''}: ${p.message}`);
}

const SHIPPED_CONFIGS = ['config/gateway.yaml', 'config/sidecar.yaml', 'deploy/kubernetes/examples/shop/gateway/gateway.yaml', 'deploy/kubernetes/gateway/gateway.yaml'];
const IN_POD_CONFIGS = ['deploy/kubernetes/gateway/gateway.yaml'];
const SHIPPED_MANIFESTS = ['config/manifests/customer.yaml', 'config/manifests/card-masking.yaml', 'deploy/kubernetes/examples/shop/gateway/manifests/partner-customer.yaml'];

describe('schema/', () => {
  it('the generated validators and docs/configuration.md are what the schemas give (else: npm run schema:build)', () => {
    for (const [file, text] of generatedFiles()) {
      assert.equal(readFileSync(join(ROOT, file), 'utf8'), text, `${file} is out of date: run npm run schema:build`);
    }
  });

  it('every shipped config and manifest names its schema on its first line, by a path that exists, and validates', () => {
    for (const [files, schema] of [[SHIPPED_CONFIGS, 'gateway.schema.json'], [SHIPPED_MANIFESTS, 'manifest.schema.json']] as const) {
      for (const file of files) {
        const first = readFileSync(join(ROOT, file), 'utf8').split('\n')[0]!;
        const m = /^# yaml-language-server: \$schema=(\S+)$/.exec(first);
        assert.ok(m, `${file} starts with its yaml-language-server line`);
        assert.equal(resolve(ROOT, dirname(file), m[1]!), join(ROOT, 'schema', schema), file);
      }
    }
    for (const file of SHIPPED_CONFIGS) {
      assert.deepEqual(schemaProblems(readFileSync(join(ROOT, file), 'utf8'), 'gateway'), [], file);
      // The central deployment's config names files that exist only inside its pod (mounted Secrets).
      if (!IN_POD_CONFIGS.includes(file)) assert.deepEqual(loadConfig({ file: join(ROOT, file), env: {} }).problems, [], file);
    }
    for (const file of SHIPPED_MANIFESTS) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      assert.deepEqual(schemaProblems(text, 'manifest'), [], file);
      assert.deepEqual(parseManifestText(text, file).problems, [], file);
    }
  });

  it('every YAML block in the README and docs that is a whole config or manifest validates', () => {
    const docs = ['README.md', ...['docs', 'docs/data-types'].flatMap((d) => readdir(d))];
    const sections = Object.keys(gatewaySchema.properties as Schema);
    let configs = 0;
    let manifests = 0;
    for (const doc of docs) {
      for (const [, block] of readFileSync(join(ROOT, doc), 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)) {
        const top = [...block!.matchAll(/^([A-Za-z]\w*):/gm)].map((m) => m[1]!);
        if (top.length === 0) continue;
        if (top.includes('name') && top.includes('fields')) {
          manifests++;
          assert.deepEqual(schemaProblems(block!, 'manifest'), [], `${doc}:\n${block}`);
        } else if (top.every((k) => sections.includes(k))) {
          configs++;
          assert.deepEqual(schemaProblems(block!, 'gateway'), [], `${doc}:\n${block}`);
        }
      }
    }
    assert.ok(configs >= 3 && manifests >= 1, `found ${configs} configs and ${manifests} manifests in the docs`);
  });

  it('a typo in each section is reported with its line and the keys it could have been', () => {
    const cases: [string, number, string][] = [
      ['http:\n  listen: 127.0.0.1:8080\n  maxBodyByte: 5\n', 3, 'http.maxBodyByte'],
      ['grpc:\n  maxMessagesBytes: 5\n', 2, 'grpc.maxMessagesBytes'],
      ['grpc:\n  tls:\n    cert: a\n    key: b\n    cacert: c\n', 5, 'grpc.tls.cacert'],
      ['identity:\n  issuer: x\n  tokenTTLSeconds: 60\n', 3, 'identity.tokenTTLSeconds'],
      ['identity:\n  clients:\n    - id: a\n      secretHash: h\n      scopes: [protect]\n      scope: [decrypt]\n', 6, 'identity.clients[0].scope'],
      ['keys:\n  source: generated\n  defaultkey: k\n', 3, 'keys.defaultkey'],
      ['manifest: manifests\n', 1, 'manifest'],
      ['proxy:\n  listen: 127.0.0.1:0\n  maxConnection: 5\n', 3, 'proxy.maxConnection'],
      ['proxy:\n  routes:\n    - name: r\n      match: { host: a.example, method: [POST] }\n      request: { manifest: m, jobType: Mask }\n', 4, 'proxy.routes[0].match.method'],
      ['proxy:\n  routes:\n    - name: r\n      match: { host: a.example }\n      request: { manifest: m, jobtype: Mask }\n', 5, 'proxy.routes[0].request.jobtype'],
      ['proxy:\n  reverse:\n    - listen: 127.0.0.1:0\n      upstream: http://a.example\n      upsteam: x\n', 5, 'proxy.reverse[0].upsteam'],
      ['proxy:\n  transparent:\n    peekTimout: 5\n', 3, 'proxy.transparent.peekTimout'],
      ['limits:\n  maxDepht: 5\n', 2, 'limits.maxDepht'],
      ['limits:\n  workers:\n    maxWorkers: 2\n', 3, 'limits.workers.maxWorkers'],
      ['logging:\n  levle: info\n', 2, 'logging.levle'],
      ['admin:\n  port: 15020\n', 2, 'admin.port'],
    ];
    for (const [yaml, line, path] of cases) {
      const problems = loadConfig({ file: withConfig(`manifests: manifests\n${yaml}`), env: {} }).problems.filter((p) => p.path === path);
      assert.equal(problems.length, 1, `${path}: ${JSON.stringify(loadConfig({ file: withConfig(`manifests: manifests\n${yaml}`), env: {} }).problems)}`);
      assert.equal(problems[0]!.line, line + 1, path);
      assert.match(problems[0]!.message, /^unknown key \(expected one of: \w+/, path);
    }
    const manifest = schemaProblems('name: m\nfields:\n  - match: a\n    Mask: {}\n    wen: []\ndetect: { kinds: [card], intext: false }\n', 'manifest');
    assert.ok(manifest.some((p) => p.startsWith('5 fields[0].wen: unknown key')), manifest.join('\n'));
    assert.ok(manifest.some((p) => p.startsWith('6 detect')), manifest.join('\n'));
  });

  it('wrong values get a plain message at their line, never the value itself', () => {
    const problems = schemaProblems('http:\n  listen: "secret-ish:99999"\n  maxBodyBytes: 1.5\nproxy:\n  routes:\n    - name: r\n      match: {}\n', 'gateway');
    assert.deepEqual(problems.sort(), [
      '2 http.listen: must be host:port (e.g. 127.0.0.1:8080)',
      '3 http.maxBodyBytes: must be a whole number',
      '6 proxy.routes[0]: needs a request or response phase',
    ]);
    assert.ok(problems.every((p) => !p.includes('secret-ish')));
  });

  it('a __proto__ key is an unknown key like any other, and changes no prototype', () => {
    const config = loadConfig({ file: withConfig('manifests: manifests\n__proto__: { polluted: 1 }\nhttp:\n  __proto__: { enabled: false }\n'), env: {} });
    assert.deepEqual(config.problems.map((p) => `${p.line} ${p.path}`), ['2 __proto__', '4 http.__proto__']);
    const manifest = parseManifestText('name: m\n__proto__: {x: 1}\nfields:\n  - match: a\n    __proto__: {y: 1}\n    Mask: {}\n', 'm.yaml');
    assert.deepEqual(manifest.problems.map((p) => `${p.line} ${p.path}`), ['2 __proto__', '5 fields[0].__proto__']);
    const empty = {} as Record<string, unknown>;
    assert.equal(empty.polluted ?? empty.enabled ?? empty.x ?? empty.y, undefined);
  });

  it('the schema and src/config/types.ts name the same keys (add a key to both)', () => {
    // Which schema mapping each interface of types.ts describes. Keys only one side has, on purpose:
    const DERIVED: Record<string, string[]> = {
      GatewayConfig: ['file', 'dataDir'], // where the file is and the data directory (DPG_DATA_DIR)
      ProxyConfig: ['forward'], // set from `listen: off` / DPG_PROXY_ADDR=off
    };
    const SCHEMA_ONLY: Record<string, string[]> = {
      'proxy.transparent': ['enabled'], // the section's presence turns the listener on; enabled: false keeps it off
    };
    const MAP: [string, string][] = [
      ['', 'GatewayConfig'], ['http', 'HttpConfig'], ['grpc', 'GrpcConfig'], ['grpc.tls', 'TlsFiles'], ['identity', 'IdentityConfig'],
      ['identity.apiKeys[]', 'ApiKeyConfig'], ['identity.clients[]', 'ClientConfig'], ['identity.clients[].pseudonymScope', 'PseudonymScopeConfig'],
      ['keys', 'KeysConfig'], ['proxy', 'ProxyConfig'], ['proxy.routes[]', 'ProxyRoute'], ['proxy.routes[].match', 'RouteMatch'],
      ['proxy.routes[].request', 'RoutePhase'], ['proxy.reverse[]', 'ReverseListener'], ['proxy.transparent', 'TransparentConfig'],
      ['limits', 'LimitsConfig'], ['limits.workers', 'WorkersConfig'], ['logging', 'LoggingConfig'], ['admin', 'AdminConfig'],
    ];
    const types = typeKeys(join(ROOT, 'src/config/types.ts'));
    for (const [path, name] of MAP) {
      const inSchema = schemaKeysAt(gatewaySchema, path);
      const inTypes = types.get(name);
      assert.ok(inTypes, `src/config/types.ts declares ${name}`);
      for (const key of inTypes!) {
        if (DERIVED[name]?.includes(key)) continue;
        assert.ok(inSchema.includes(key), `${name}.${key} (src/config/types.ts) is missing from schema/gateway.schema.json at ${path || 'the top level'}: add it there with a description, type and default, then npm run schema:build`);
      }
      for (const key of inSchema) {
        if (SCHEMA_ONLY[path]?.includes(key)) continue;
        assert.ok(inTypes!.includes(key), `${path ? `${path}.` : ''}${key} (schema/gateway.schema.json) is missing from ${name} in src/config/types.ts`);
      }
    }
  });

  it('every key has a description, a type and a default (or says what stands in for one)', () => {
    for (const [label, root] of [['gateway', gatewaySchema], ['manifest', manifestSchema]] as const) {
      visitProperties(root, root, '', (path, s, required) => {
        assert.ok(typeof s.description === 'string' && s.description.length > 0, `${label} ${path}: description`);
        assert.ok(s.type || s.enum || s.anyOf || s.const !== undefined, `${label} ${path}: type`);
        if (label === 'gateway') assert.ok('default' in s || typeof s.defaultText === 'string' || required || s.type === 'object', `${label} ${path}: default`);
      });
    }
  });
});

function readdir(dir: string): string[] {
  return (ts.sys.readDirectory(join(ROOT, dir), ['.md'], undefined, undefined, 1) as string[]).map((f) => f.slice(ROOT.length + 1));
}

function deref(root: Schema, s: Schema): Schema {
  if (typeof s?.$ref !== 'string') return s;
  const target = s.$ref.replace(/^#\//, '').split('/').reduce((o: Schema, k: string) => o?.[k], root);
  const { $ref: _, ...rest } = s;
  return { ...deref(root, target), ...rest };
}

/** The property names of the mapping at a path such as `proxy.routes[].match` ('' = the top). */
function schemaKeysAt(root: Schema, path: string): string[] {
  let s = root;
  for (const part of path ? path.split('.') : []) {
    const name = part.replace(/\[\]$/, '');
    s = deref(root, s.properties[name]);
    if (part.endsWith('[]')) s = deref(root, s.items);
  }
  return Object.keys(s.properties ?? {});
}

function visitProperties(root: Schema, s: Schema, prefix: string, visit: (path: string, s: Schema, required: boolean) => void, seen = new Set<Schema>()): void {
  s = deref(root, s);
  if (seen.has(s)) return;
  seen.add(s);
  const required = new Set<string>(s.required ?? []);
  for (const [key, sub] of Object.entries((s.properties ?? {}) as Schema)) {
    const full = deref(root, sub);
    visit(`${prefix}${key}`, full, required.has(key));
    visitProperties(root, full, `${prefix}${key}.`, visit, seen);
    if (full.items) visitProperties(root, full.items, `${prefix}${key}[].`, visit, seen);
    for (const b of [...(full.anyOf ?? [])]) visitProperties(root, b, `${prefix}${key}.`, visit, seen);
  }
  if (s.$defs === undefined && s.properties === undefined && s.type === 'object') return;
}

/** Interface and type-alias property names of a TypeScript file (members of unions and intersections merged). */
function typeKeys(file: string): Map<string, string[]> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out = new Map<string, string[]>();
  const members = (node: ts.Node): string[] => {
    if (ts.isTypeLiteralNode(node) || ts.isInterfaceDeclaration(node)) return node.members.flatMap((m) => (m.name && ts.isIdentifier(m.name) ? [m.name.text] : []));
    if (ts.isUnionTypeNode(node) || ts.isIntersectionTypeNode(node)) return node.types.flatMap(members);
    if (ts.isParenthesizedTypeNode(node)) return members(node.type);
    if (ts.isTypeReferenceNode(node) && ts.isIdentifier(node.typeName)) return out.get(node.typeName.text) ?? [];
    return [];
  };
  for (const st of source.statements) {
    if (ts.isInterfaceDeclaration(st)) out.set(st.name.text, members(st));
    if (ts.isTypeAliasDeclaration(st)) out.set(st.name.text, [...new Set(members(st.type))]);
  }
  return out;
}
