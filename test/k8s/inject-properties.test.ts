// Properties of inject() over generated pods (fast-check): injecting twice is injecting once; no
// name is ever duplicated; taking the injection out gives the pod back; and after another webhook
// adds a container (reinvocation), injecting again equals injecting the pod that had it from the start.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { inject, uninject, type JsonObject } from '../../src/k8s/inject.ts';
import { testOptions } from './helpers/options.ts';

const options = testOptions();

const NAMES = ['app', 'web', 'worker', 'sidecar', 'migrate', 'init-db', 'metrics', 'proxy'];
const ENV_NAMES = ['LOG_LEVEL', 'SSL_CERT_FILE', 'HTTP_PROXY', 'no_proxy', 'JAVA_TOOL_OPTIONS', 'PORT'];

const envArb = fc.uniqueArray(fc.constantFrom(...ENV_NAMES), { minLength: 1, maxLength: 3 }).map((names) => names.map((name) => ({ name, value: `v-${name}` })));

function containerArb(name: string) {
  return fc
    .record(
      {
        image: fc.constantFrom('registry.example/a:1', 'registry.example/b:2'),
        env: envArb,
        envFrom: fc.constant([{ configMapRef: { name: 'settings' } }]),
        volumeMounts: fc.constant([{ name: 'scratch', mountPath: '/scratch' }]),
        securityContext: fc.constantFrom({ runAsUser: 10002 }, { runAsNonRoot: true }),
      },
      { requiredKeys: ['image'] },
    )
    .map((c) => ({ name, ...c }));
}

const annotationsArb = fc.record(
  {
    'dpg.io/capture-mode': fc.constantFrom('transparent', 'env-proxy'),
    'dpg.io/exclude-outbound-ports': fc.constantFrom('5432', '6379,5432'),
    'dpg.io/exclude-outbound-cidrs': fc.constantFrom('10.0.0.0/8', '169.254.169.254/32,fd00::/8'),
    'dpg.io/keyring': fc.constant('keys'),
    'team': fc.constantFrom('a', 'b'),
  },
  { requiredKeys: [] },
);

/** A pod template: unique container names split between init and regular containers. */
const podArb = fc
  .uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 5 })
  .chain((names) => fc.tuple(fc.constant(names), fc.integer({ min: 0, max: names.length - 1 })))
  .chain(([names, initCount]) =>
    fc.record(
      {
        metadata: fc.record({ labels: fc.constant({ app: 'x' }), annotations: annotationsArb }, { requiredKeys: [] }),
        initContainers: fc.tuple(...names.slice(0, initCount).map(containerArb)),
        containers: fc.tuple(...names.slice(initCount).map(containerArb)),
        volumes: fc.constant([{ name: 'scratch', emptyDir: {} }]),
        restartPolicy: fc.constantFrom('Always', 'OnFailure', 'Never'),
        securityContext: fc.constantFrom({ runAsUser: 10003 }, { fsGroup: 2000 }),
      },
      { requiredKeys: ['containers', 'volumes'] },
    ),
  )
  .map((r) => {
    const { metadata, ...spec } = r;
    if (Array.isArray(spec.initContainers) && spec.initContainers.length === 0) delete spec.initContainers;
    const meta = metadata && Object.keys(metadata.annotations ?? {}).length === 0 ? { ...metadata, annotations: undefined } : metadata;
    const template: JsonObject = { spec };
    if (meta) template.metadata = JSON.parse(JSON.stringify(meta));
    if (template.metadata && Object.keys(template.metadata as object).length === 0) delete template.metadata;
    return JSON.parse(JSON.stringify(template)) as JsonObject;
  });

function injected(template: JsonObject): JsonObject {
  const r = inject(template, options);
  assert.equal(r.outcome, 'injected', r.outcome === 'refused' ? r.problems.join('; ') : '');
  return r.template;
}

const spec = (t: JsonObject) => t.spec as { initContainers?: JsonObject[]; containers: JsonObject[]; volumes?: JsonObject[] };

function assertNoDuplicates(t: JsonObject): void {
  const s = spec(t);
  const containers = [...(s.initContainers ?? []), ...s.containers];
  const names = containers.map((c) => c.name);
  assert.equal(new Set(names).size, names.length, `container names ${names.join(',')}`);
  const volumes = (s.volumes ?? []).map((v) => v.name);
  assert.equal(new Set(volumes).size, volumes.length, `volume names ${volumes.join(',')}`);
  for (const c of containers) {
    const env = ((c.env as JsonObject[] | undefined) ?? []).map((e) => e.name);
    assert.equal(new Set(env).size, env.length, `${String(c.name)} env ${env.join(',')}`);
    const mounts = ((c.volumeMounts as JsonObject[] | undefined) ?? []).map((m) => m.mountPath);
    assert.equal(new Set(mounts).size, mounts.length, `${String(c.name)} mounts ${mounts.join(',')}`);
    for (const m of (c.volumeMounts as JsonObject[] | undefined) ?? []) assert.ok(volumes.includes(m.name as string), `mount of a missing volume ${String(m.name)}`);
  }
}

describe('inject() properties', () => {
  it('is idempotent', () => {
    fc.assert(
      fc.property(podArb, (pod) => {
        const once = injected(pod);
        assert.deepEqual(injected(once), once);
      }),
      { numRuns: 200 },
    );
  });

  it('never duplicates a container, volume, variable or mount, and mounts only volumes that exist', () => {
    fc.assert(fc.property(podArb, (pod) => assertNoDuplicates(injected(pod))), { numRuns: 200 });
  });

  it('taking the injection out gives the pod back', () => {
    fc.assert(fc.property(podArb, (pod) => assert.deepEqual(uninject(injected(pod)), pod)), { numRuns: 200 });
  });

  it('never changes the input object', () => {
    fc.assert(
      fc.property(podArb, (pod) => {
        const copy = structuredClone(pod);
        inject(pod, options);
        assert.deepEqual(pod, copy);
      }),
      { numRuns: 100 },
    );
  });

  it('reinvocation after another webhook adds a container equals injecting the pod that had it', () => {
    const added = fc.record({
      name: fc.constantFrom('vault-agent', 'istio-proxy', 'log-forwarder'),
      asInit: fc.boolean(),
      first: fc.boolean(),
    });
    fc.assert(
      fc.property(podArb, added, (pod, other) => {
        const c = { name: other.name, image: 'registry.example/other:1' };
        const addTo = (t: JsonObject): JsonObject => {
          const copy = structuredClone(t);
          const s = spec(copy);
          const key = other.asInit ? 'initContainers' : 'containers';
          const list = [...((s[key] as JsonObject[] | undefined) ?? [])];
          if (other.first) list.unshift(c);
          else list.push(c);
          (s as JsonObject)[key] = list;
          return copy;
        };
        const reinvoked = injected(addTo(injected(pod)));
        assert.deepEqual(reinvoked, injected(addTo(pod)));
        assertNoDuplicates(reinvoked);
        const theirs = [...(spec(reinvoked).initContainers ?? []), ...spec(reinvoked).containers].find((x) => x.name === other.name)!;
        assert.ok(((theirs.volumeMounts as JsonObject[]) ?? []).some((m) => m.name === 'dpg-trust'), 'the added container trusts the gateway CA');
      }),
      { numRuns: 200 },
    );
  });
});
