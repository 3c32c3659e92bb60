// deploy/monitoring: the alerting rules pass `promtool check rules` and equal the PrometheusRule of
// the central deployment; the Grafana dashboard type-checks as Grafana's dashboard model
// (@grafana/schema, unknown fields rejected) and is laid out sanely; and every metric a rule or a
// panel queries exists in the /metrics of a real `dpg serve` that has served a little traffic.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { parse } from 'yaml';
import { request } from 'undici';
import { ROOT, startRecordingUpstream, startServe, type RecordingUpstream, type ServeProcess } from '../e2e/serve-process.ts';
import { postJson, tokenFor } from '../e2e/http-helpers.ts';

const MONITORING = join(ROOT, 'deploy', 'monitoring');
const RULES_FILE = join(MONITORING, 'rules.yaml');
const DASHBOARD_FILE = join(MONITORING, 'grafana-dashboard.json');
const PROMETHEUS_RULE = join(ROOT, 'deploy', 'kubernetes', 'gateway', 'prometheus-rule.yaml');

type Json = Record<string, any>;
const rules = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { name: string; rules: Json[] }[] };
const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Json;

/** Series Prometheus makes itself, not the gateway. */
const SYNTHETIC = new Set(['up']);
const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression reads: identifiers that are not functions (followed by `(`),
 * keywords, label names inside `{…}` or `by (…)`, strings, durations or Grafana variables.
 */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\w+/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = stripped.slice(m.index! + m[0].length).trimStart();
    if (after.startsWith('(') || PROMQL_WORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0]);
  }
  return [...names];
}

const ruleExprs = rules.groups.flatMap((g) => g.rules.map((r) => ({ label: `rule ${r.alert}`, expr: String(r.expr) })));
const panels: Json[] = (dashboard.panels as Json[]).flatMap((p) => [p, ...((p.panels as Json[] | undefined) ?? [])]);
const panelExprs = panels.flatMap((p) => ((p.targets as Json[] | undefined) ?? []).map((t) => ({ label: `panel "${p.title}" ${t.refId}`, expr: String(t.expr) })));
const variableExprs = (dashboard.templating.list as Json[]).filter((v) => v.type === 'query').map((v) => ({ label: `variable ${v.name}`, expr: String(v.query.query).replace(/^label_values\(([^,]+),.*$/, '$1') }));

describe('alerting rules', () => {
  const promtool = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
  it('promtool check rules accepts deploy/monitoring/rules.yaml', { skip: promtool ? false : 'SKIPPED: promtool is not installed (apt-get install prometheus)' }, () => {
    const r = spawnSync('promtool', ['check', 'rules', RULES_FILE], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, new RegExp(`SUCCESS: ${ruleExprs.length} rules found`));
  });

  it('the PrometheusRule of deploy/kubernetes/gateway holds exactly the same groups', () => {
    const object = parse(readFileSync(PROMETHEUS_RULE, 'utf8')) as Json;
    assert.equal(object.kind, 'PrometheusRule');
    assert.deepEqual(object.spec, { groups: rules.groups });
  });

  it('every alert has a severity, a summary and a description', () => {
    for (const r of rules.groups.flatMap((g) => g.rules)) {
      assert.match(String(r.labels?.severity), /^(critical|warning|info)$/, r.alert);
      assert.ok(r.annotations?.summary && r.annotations?.description, r.alert);
    }
  });
});

describe('Grafana dashboard', () => {
  it('type-checks as @grafana/schema Dashboard (unknown fields are errors)', () => {
    const file = join(ROOT, 'test', 'deploy', '__dashboard_check__.ts');
    // JSON has no enums: each enum of the model is compared by its string values (ThresholdsMode → "absolute" | "percentage").
    const text = [
      "import type { Dashboard } from '@grafana/schema';",
      'type AsJson<T> = T extends string ? `${T}` : T extends readonly (infer U)[] ? AsJson<U>[] : T extends object ? { [K in keyof T]: AsJson<T[K]> } : T;',
      `export const d: AsJson<Dashboard> = ${JSON.stringify(dashboard, null, 1)};`,
    ].join('\n');
    const options: ts.CompilerOptions = { strict: true, noEmit: true, skipLibCheck: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [] };
    const host = ts.createCompilerHost(options);
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (name, language) => (name === file ? ts.createSourceFile(name, text, language) : getSourceFile(name, language));
    const fileExists = host.fileExists.bind(host);
    host.fileExists = (name) => name === file || fileExists(name);
    const program = ts.createProgram([file], options, host);
    const problems = ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, ' '));
    assert.deepEqual(problems, []);
  });

  it('ids are unique, panels fit the 24-column grid without overlapping, every query has a refId and the datasource variable', () => {
    const ids = panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
    const cells = new Set<string>();
    for (const p of panels) {
      const { x, y, w, h } = p.gridPos;
      assert.ok(x >= 0 && w > 0 && x + w <= 24 && h > 0, `${p.title}: gridPos`);
      for (let i = x; i < x + w; i++) for (let j = y; j < y + h; j++) {
        assert.ok(!cells.has(`${i},${j}`), `${p.title} overlaps another panel`);
        cells.add(`${i},${j}`);
      }
      if (p.type === 'row') continue;
      assert.equal(p.datasource?.uid, '${datasource}', p.title);
      assert.ok(p.targets.length > 0, p.title);
      for (const t of p.targets) assert.ok(t.refId && t.expr, p.title);
    }
    assert.deepEqual((dashboard.templating.list as Json[]).map((v) => v.name), ['datasource', 'job', 'instance']);
  });
});

describe('every metric the rules and the dashboard query exists in a real gateway', () => {
  let serve: ServeProcess;
  let upstream: RecordingUpstream;
  let exposition = '';
  before(async () => {
    upstream = await startRecordingUpstream();
    serve = await startServe('dpg-monitoring-', {
      routes: `    - name: partner\n      match: { host: 127.0.0.1, port: ${upstream.port}, path: "/**" }\n      request: { manifest: customer, jobType: Mask }`,
      reverse: `    - listen: 127.0.0.1:0\n      upstream: http://127.0.0.1:${upstream.port}`,
    });
    const token = await tokenFor(serve.base, { id: 'demo-client', secret: 'demo-secret' });
    const headers = { 'x-resource-token': token };
    assert.equal((await postJson(serve.base, '/api/protect', { manifestName: 'customer', jobType: 'Mask', dataSet: { cardNumber: '4111 1111 1111 1111', notes: 'call +1 415-555-0132' } }, headers)).status, 200);
    assert.equal((await postJson(serve.base, '/api/protect', { manifestName: 'nope', jobType: 'Mask', dataSet: {} }, headers)).status, 404);
    // Through the reverse listener, so a routed request is counted by route.
    const proxied = await request(`http://127.0.0.1:${serve.ports['proxy-reverse']}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"cardNumber":"4111 1111 1111 1111"}' });
    await proxied.body.text();
    assert.equal(proxied.statusCode, 200);
    exposition = await (await request(`${serve.base}/metrics`)).body.text();
  });
  after(async () => {
    await serve?.stop();
    await upstream?.close();
  });

  it('the extractor reads names, not functions, labels or variables', () => {
    assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (door, le) (rate(dpg_x_bucket{job=~"$job", a="b(c)"}[$__rate_interval]))) > 1'), ['dpg_x_bucket']);
    assert.deepEqual(metricNames('time() - max by (key) (dpg_a <= time()) > 365 * 86400'), ['dpg_a']);
    assert.deepEqual(metricNames('count by (job) (count by (job, fingerprint) (dpg_b)) > 1'), ['dpg_b']);
  });

  it('each name has a sample in /metrics', () => {
    const samples = new Set(exposition.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)![0]));
    const used = [...ruleExprs, ...panelExprs, ...variableExprs].flatMap(({ label, expr }) => metricNames(expr).map((name) => ({ label, name })));
    assert.ok(used.length >= 30, `only ${used.length} metric uses found: the extractor is broken`);
    const missing = used.filter(({ name }) => !SYNTHETIC.has(name) && !samples.has(name)).map(({ label, name }) => `${label}: ${name}`);
    assert.deepEqual(missing, []);
    assert.match(exposition, /dpg_certificate_expiry_timestamp_seconds\{certificate="proxy-ca"\} \d{10}/);
    assert.match(exposition, /dpg_keyring_key_version_active_from_timestamp_seconds\{key="[^"]+",version="1"\} \d+/);
  });
});
