// Issue 16 class 12: `dpg inject` and `dpg inject --check` read manifests as the API server does
// (go-yaml v2 through sigs.k8s.io/yaml: YAML 1.1 scalars, its integers, merge keys), write back
// values kubectl reads as the same, and answer JSON with JSON. Property tests generate the spellings.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkStream, injectStream } from '../../src/k8s/manual.ts';
import { parseManifests } from '../../src/k8s/manifest-yaml.ts';
import { testOptions } from './helpers/options.ts';

const options = testOptions();

/** A Pod whose spec (YAML, indented two spaces under `spec:`) is given. */
const podYaml = (spec: string, metadata = '') => `apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n${metadata}spec:\n${spec}`;
const container = (securityContext: string) => `  containers:\n    - name: app\n      image: registry.example/app:1\n      securityContext:\n${securityContext}`;

function assertRefused(text: string, message: RegExp): void {
  const r = injectStream(text, options);
  assert.equal(r.output, undefined, 'no output for a refused stream');
  assert.match(r.reports.flatMap((x) => x.messages).join('\n'), message);
  const check = checkStream(text, options);
  assert.equal(check.ok, false, '--check fails too');
  assert.match(check.reports.flatMap((x) => x.messages).join('\n'), message);
}

const read = (text: string): unknown => parseManifests(text)[0]!.toJS();

describe('YAML 1.1 scalars, as the API server reads them', () => {
  it('reads go-yaml v2 booleans, integers, and leaves sexagesimal and dates as strings', () => {
    const value = read(`a: yes\nb: on\nc: Y\nd: off\ne: 0644\nf: 10_001\ng: 0o23421\nh: 0x2711\ni: 0b10\nj: 08\nk: 1:30\nl: 2024-01-01\nm: "yes"\nnn: -0644\no: 0\nn: key\n`);
    assert.deepEqual(value, { a: true, b: true, c: true, d: false, e: 420, f: 10001, g: 10001, h: 10001, i: 2, j: 8, k: '1:30', l: '2024-01-01', m: 'yes', nn: -420, o: 0, false: 'key' });
  });

  for (const spelling of ['yes', 'Yes', 'YES', 'on', 'On', 'ON', 'y', 'Y', 'True']) {
    it(`privileged: ${spelling} is refused by inject and --check`, () => {
      assertRefused(podYaml(container(`        privileged: ${spelling}\n`)), /could step around transparent capture: privileged/);
    });
  }

  for (const spelling of ['10_001', '1_0_0_0_1', '023421', '0o23421', '0x2711', '+10001', '0b10011100010001']) {
    it(`runAsUser: ${spelling} (the gateway's UID) is refused at container and pod level`, () => {
      assertRefused(podYaml(container(`        runAsUser: ${spelling}\n`)), /runs as UID 10001/);
      assertRefused(podYaml(`  securityContext:\n    runAsUser: ${spelling}\n  containers:\n    - name: app\n      image: a\n`), /runs as UID 10001/);
    });
  }

  it('hostNetwork: yes is refused', () => {
    assertRefused(podYaml(`  hostNetwork: yes\n  containers:\n    - name: app\n      image: a\n`), /hostNetwork pod/);
  });

  it('shareProcessNamespace: yes with SYS_PTRACE is refused', () => {
    assertRefused(
      podYaml(`  shareProcessNamespace: on\n${container(`        capabilities:\n          drop: [ALL]\n          add: [SYS_PTRACE]\n`)}`),
      /adds SYS_PTRACE \(the pod shares its process namespace/,
    );
  });

  it('runAsUser 10001 through a merge key is refused', () => {
    const text = `apiVersion: apps/v1
kind: Deployment
metadata: { name: d }
spec:
  template:
    spec:
      containers:
        - &base
          name: base
          image: a
          securityContext: { runAsUser: 10002, capabilities: { drop: [ALL] } }
        - <<: *base
          name: sneaky
          securityContext: { runAsUser: 10_001 }
`;
    assertRefused(text, /"sneaky" runs as UID 10001/);
  });

  it('property: every spelling go-yaml reads as true makes privileged refused; every spelling of 10001 makes runAsUser refused', () => {
    const truthy = fc.constantFrom('y', 'Y', 'yes', 'Yes', 'YES', 'on', 'On', 'ON', 'true', 'True', 'TRUE');
    // 10001 in every base go-yaml reads, with underscores anywhere after the first character.
    const uid = fc
      .tuple(fc.constantFrom(['', 10], ['0', 8], ['0o', 8], ['0O', 8], ['0x', 16], ['0X', 16], ['0b', 2], ['+', 10]) as fc.Arbitrary<[string, number]>, fc.array(fc.nat(20), { maxLength: 3 }))
      .map(([[prefix, radix], cuts]) => {
        let digits = (10001).toString(radix);
        for (const c of cuts) {
          const at = 1 + (c % digits.length);
          if (at < digits.length) digits = `${digits.slice(0, at)}_${digits.slice(at)}`;
        }
        return `${prefix}${digits}`;
      });
    fc.assert(
      fc.property(truthy, uid, (t, u) => {
        assert.equal(read(`v: ${u}\n`) && (read(`v: ${u}\n`) as { v: unknown }).v, 10001, u);
        assertRefused(podYaml(container(`        privileged: ${t}\n`)), /privileged/);
        assertRefused(podYaml(container(`        runAsUser: ${u}\n        capabilities: { drop: [ALL] }\n`)), /runs as UID 10001/);
      }),
      { numRuns: 60 },
    );
  });
});

describe("the user's values come back as kubectl reads them", () => {
  const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    metadata:
      labels: { app: web }
    spec:
      securityContext: { runAsUser: 10002, runAsNonRoot: true }
      containers:
        - &app
          name: web
          image: registry.example/web:1
          env:
            - { name: MODE, value: "0644" }
            - { name: WHEN, value: 1:30 }
            - { name: FLAG, value: "yes" }
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: [ALL] } }
          volumeMounts: [{ name: cfg, mountPath: /etc/web }]
        - <<: *app
          name: worker
      volumes:
        - name: cfg
          configMap: { name: web, defaultMode: 0644 }
`;

  it('defaultMode 0644 stays 420 (octal), merge keys keep env and securityContext, strings stay strings', () => {
    const r = injectStream(deployment, options);
    assert.ok(r.output, r.reports.flatMap((x) => x.messages).join('\n'));
    assert.match(r.output, /defaultMode: (0644|420)\b/);
    const out = read(r.output) as { spec: { template: { spec: { containers: { name: string; env?: { name: string; value: unknown }[]; securityContext?: unknown }[]; volumes: { configMap?: { defaultMode: number } }[] } } } };
    const spec = out.spec.template.spec;
    assert.equal(spec.volumes.find((v) => v.configMap)!.configMap!.defaultMode, 420);
    const worker = spec.containers.find((c) => c.name === 'worker')!;
    assert.deepEqual(worker.securityContext, { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } }, 'the merged securityContext is kept');
    const env = Object.fromEntries(worker.env!.map((e) => [e.name, e.value]));
    assert.equal(env.MODE, '0644');
    assert.equal(env.WHEN, '1:30');
    assert.equal(env.FLAG, 'yes');
    assert.ok('SSL_CERT_FILE' in env, 'and the worker is injected');
  });

  it('an octal literal is never written as plain decimal digits of the octal (644)', () => {
    const r = injectStream(deployment, options);
    assert.doesNotMatch(r.output ?? '', /defaultMode: 644\b/);
  });
});

describe('JSON in, JSON out', () => {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p' },
    spec: { containers: [{ name: 'app', image: 'a', securityContext: { runAsUser: 10002, capabilities: { drop: ['ALL'] } } }], volumes: [{ name: 'c', configMap: { name: 'c', defaultMode: 420 } }] },
  };

  it('a JSON object comes back as JSON, injected, with its values', () => {
    const r = injectStream(JSON.stringify(pod, null, 2), options);
    assert.ok(r.output);
    const out = JSON.parse(r.output) as typeof pod & { spec: { initContainers: { name: string }[] } };
    assert.ok(out.spec.initContainers.some((c) => c.name === 'dpg-proxy'));
    assert.equal(out.spec.volumes[0].configMap.defaultMode, 420);
  });

  it('a JSON List comes back as JSON with every item injected', () => {
    const list = { apiVersion: 'v1', kind: 'List', items: [pod, { ...pod, metadata: { name: 'q' } }] };
    const r = injectStream(JSON.stringify(list), options);
    const out = JSON.parse(r.output!) as { items: { spec: { initContainers?: unknown[] } }[] };
    assert.equal(out.items.filter((i) => i.spec.initContainers).length, 2);
  });

  it('a JSON pod already injected comes back byte for byte', () => {
    const once = injectStream(JSON.stringify(pod), options).output!;
    assert.equal(injectStream(once, options).output, once);
  });

  it('JSON that does not parse is refused without quoting the input', () => {
    const secret = '{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"env": [{"value": "4111111111111111"}]}]}';
    const r = injectStream(`${secret} trailing`, options);
    assert.equal(r.output, undefined);
    const messages = r.reports.flatMap((x) => x.messages).join('\n');
    assert.match(messages, /starts with \{ but is not one JSON object/);
    assert.doesNotMatch(messages, /4111/);
  });

  it('JSON with privileged true is refused by --check', () => {
    const bad = structuredClone(pod) as { spec: { containers: { securityContext: Record<string, unknown> }[] } };
    bad.spec.containers[0].securityContext.privileged = true;
    assert.equal(checkStream(JSON.stringify(bad), options).ok, false);
  });
});
