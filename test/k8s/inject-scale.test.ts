// Issue 16 class 14: injection scales linearly. Counts, not time (the timings are in
// bench/inject-list.bench.ts and docs/performance.md): the JSON Patch of a List of N Deployments
// has N times the operations of one, a pod of 400 containers gets a patch with a bounded number of
// operations per container, and the output of a large List parses with every item injected.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { decide } from '../../src/k8s/admission.ts';
import { injectObject, injectStream } from '../../src/k8s/manual.ts';
import { podPatch } from '../../src/k8s/patch.ts';
import { testOptions } from './helpers/options.ts';

const options = testOptions();
type Json = Record<string, any>;

const deployment = (i: number): Json => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: `app-${i}` },
  spec: {
    template: {
      metadata: { labels: { app: `app-${i}` } },
      spec: {
        securityContext: { runAsUser: 10002 },
        containers: [{ name: 'app', image: 'a', env: [{ name: 'A', value: 'b' }], securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
        volumes: [{ name: 'cfg', configMap: { name: 'c', defaultMode: 420 } }],
      },
    },
  },
});
const list = (n: number): Json => ({ apiVersion: 'v1', kind: 'List', items: Array.from({ length: n }, (_, i) => deployment(i)) });

describe('injection at scale (counts)', () => {
  it('the patch of a List of N items has N times the operations of one item', () => {
    const ops = (n: number) => {
      const input = list(n);
      const { object } = injectObject(input, options, 1);
      return podPatch(input, object).length;
    };
    const one = ops(1);
    assert.ok(one > 0);
    for (const n of [10, 100, 1000]) assert.equal(ops(n), n * one, `${n} items`);
  });

  it('a List of 2,000 Deployments through dpg inject: the output parses, every item injected, in order', () => {
    const n = 2000;
    const r = injectStream(toYaml(list(n)), options);
    assert.ok(r.output, r.reports.slice(0, 3).map((x) => x.messages.join()).join('\n'));
    assert.equal(r.reports.filter((x) => x.outcome === 'injected').length, n);
    const out = parse(r.output) as Json;
    assert.equal(out.items.length, n);
    out.items.forEach((item: Json, i: number) => {
      assert.equal(item.metadata.name, `app-${i}`);
      assert.ok(item.spec.template.spec.initContainers.some((c: Json) => c.name === 'dpg-proxy'), `item ${i}`);
      assert.equal(item.spec.template.spec.volumes[0].configMap.defaultMode, 420);
    });
  });

  it('the webhook answers a pod of 400 containers with a patch of a bounded size per container', () => {
    const patchOf = (containers: number) => {
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'wide' }, spec: { securityContext: { runAsUser: 10002 }, containers: Array.from({ length: containers }, (_, i) => ({ name: `c${i}`, image: 'a', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } })) } };
      const review = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: 'shop', object: pod } };
      const answer = decide(review, 'mutate', { injector: options, excludedNamespaces: new Set() });
      assert.ok(answer.ok && answer.outcome === 'injected');
      const response = (answer.ok ? answer.review.response : {}) as { patch: string };
      return JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as { op: string; path: string }[];
    };
    const small = patchOf(4);
    const wide = patchOf(400);
    const perContainer = (wide.length - small.length) / 396;
    assert.ok(Number.isInteger(perContainer) && perContainer <= 3, `operations per container: ${perContainer}`);
    // Every container got the trust mount and its variables.
    for (let i = 0; i < 400; i++) assert.ok(wide.some((op) => op.path.startsWith(`/spec/containers/${i}/`)), `container ${i}`);
  });
});

/** YAML as kubectl prints a List (block style), written here without the yaml package's cost. */
function toYaml(value: unknown, indent = ''): string {
  if (Array.isArray(value)) return value.map((v) => `${indent}- ${toYaml(v, `${indent}  `).trimStart()}`).join('');
  if (value !== null && typeof value === 'object') {
    return Object.entries(value as Json)
      .map(([k, v]) => (v !== null && typeof v === 'object' ? `${indent}${k}:\n${toYaml(v, `${indent}  `)}` : `${indent}${k}: ${JSON.stringify(v)}\n`))
      .join('');
  }
  return `${JSON.stringify(value)}\n`;
}
