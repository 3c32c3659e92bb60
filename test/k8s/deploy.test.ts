// deploy/kubernetes: every object in every file, and every kustomization rendered by `kubectl
// kustomize`, is valid against the Kubernetes OpenAPI schemas (unknown fields included); the
// webhook configuration and the admission policy say what docs/kubernetes.md says; and the policy's
// CEL, evaluated with a CEL implementation, accepts every injected golden pod and refuses the rest.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, mkdtempSync, rmSync, cpSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { parseAllDocuments, parse } from 'yaml';
import { evaluate } from '@marcbachmann/cel-js';
import fc from 'fast-check';
import { inject } from '../../src/k8s/inject.ts';
import { ALLOWED_ADDS, ALLOWED_UNSHARED_ADDS, FORBIDDEN_HOST_PATHS, forbiddenHostPath } from '../../src/k8s/capture-guard.ts';
import { CONTAINER, GATEWAY_UID } from '../../src/k8s/names.ts';
import { injectStream } from '../../src/k8s/manual.ts';
import { loadConfig } from '../../src/config/load.ts';
import { testOptions } from './helpers/options.ts';
import { validateObjects, type K8sObject } from './helpers/schema.ts';

const ROOT = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..');
const DEPLOY = join(ROOT, 'deploy', 'kubernetes');
const GOLDEN = join(ROOT, 'test', 'k8s', 'inject');
const SYSTEM = ['kube-system', 'kube-public', 'kube-node-lease', 'dpg-system'];

type Json = Record<string, any>;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? files(full) : [full];
  });
}

/** The YAML files that hold Kubernetes objects (not kustomizations, not the gateway's own config). */
const objectFiles = files(DEPLOY).filter(
  (f) => /\.ya?ml$/.test(f) && !f.endsWith('kustomization.yaml') && !f.includes(`${join('shop', 'gateway')}`) && !f.endsWith(join('kubernetes', 'gateway', 'gateway.yaml')),
);
const kustomizations = files(DEPLOY).filter((f) => f.endsWith('kustomization.yaml')).map((f) => join(f, '..'));

const docs = (text: string): Json[] => parseAllDocuments(text).map((d) => d.toJS()).filter((o) => o && typeof o === 'object');
const byKind = (objects: Json[], kind: string, name?: string) => objects.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
const base = objectFiles.filter((f) => f.includes(`${join('kubernetes', 'base')}`)).flatMap((f) => docs(readFileSync(f, 'utf8')));

const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
const haveKubectl = kubectl.status === 0;
function render(dir: string): Json[] {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 180_000 });
  assert.equal(r.status, 0, r.stderr);
  return docs(r.stdout);
}

describe('deploy/kubernetes', () => {
  it('every object in every file is valid against the Kubernetes schemas', async () => {
    const items = objectFiles.flatMap((f) => docs(readFileSync(f, 'utf8')).map((object, i) => ({ label: `${relative(ROOT, f)}#${i + 1}`, object: object as K8sObject })));
    assert.ok(items.length >= 20);
    assert.deepEqual(await validateObjects(items), []);
  });

  it('the kustomizations: base, both certificate overlays, the example and the central gateway', () => {
    assert.deepEqual(kustomizations.map((d) => relative(DEPLOY, d)).sort(), ['base', 'examples/shop', 'gateway', 'overlays/cert-manager', 'overlays/self-managed']);
  });

  it('kubectl kustomize of each renders objects valid against the schemas', { skip: haveKubectl ? false : 'kubectl is not installed: kustomize output not rendered' }, async () => {
    const items: { label: string; object: K8sObject }[] = [];
    for (const dir of kustomizations) {
      const name = relative(DEPLOY, dir);
      const objects = render(dir);
      assert.ok(objects.length > 5, name);
      items.push(...objects.map((object, i) => ({ label: `${name}#${i + 1} ${object.kind}/${object.metadata?.name}`, object })));
      for (const o of objects) {
        for (const c of [...(o.spec?.template?.spec?.containers ?? []), ...(o.spec?.jobTemplate?.spec?.template?.spec?.containers ?? [])]) {
          assert.notEqual(c.image, 'dpg', `${name}: ${o.kind}/${o.metadata.name}: the image tag is set by the kustomization`);
        }
      }
      if (name.endsWith('cert-manager')) {
        assert.equal(byKind(objects, 'MutatingWebhookConfiguration')[0].metadata.annotations['cert-manager.io/inject-ca-from'], 'dpg-system/dpg-injector-tls');
        assert.equal(byKind(objects, 'Certificate', 'dpg-injector-tls')[0].spec.secretName, 'dpg-injector-tls');
      }
      if (name.endsWith('self-managed') || name.endsWith('shop')) {
        assert.equal(byKind(objects, 'CronJob').length, 1, name);
        assert.ok(byKind(objects, 'Job', 'dpg-injector-certs').length === 1, name);
      }
    }
    // One pass for all (the strict pass compiles them together).
    assert.deepEqual(await validateObjects(items), []);
  });

  describe('the injector (base)', () => {
    it('two replicas, a PodDisruptionBudget over them, no API access', () => {
      const [deployment] = byKind(base, 'Deployment', 'dpg-injector');
      assert.equal(deployment.spec.replicas, 2);
      const [pdb] = byKind(base, 'PodDisruptionBudget');
      assert.deepEqual(pdb.spec.selector.matchLabels, deployment.spec.selector.matchLabels);
      assert.equal(pdb.spec.minAvailable, 1);
      assert.equal(deployment.spec.template.spec.automountServiceAccountToken, false);
      assert.equal(byKind(base, 'ServiceAccount')[0].automountServiceAccountToken, false);
      assert.deepEqual([...byKind(base, 'Role'), ...byKind(base, 'ClusterRole')], []);
      assert.equal(deployment.spec.template.metadata.labels['dpg.io/inject'], 'disabled');
      assert.ok(deployment.spec.template.spec.containers[0].args.includes('--exclude-namespaces=$(POD_NAMESPACE)'));
    });

    it('the webhook: sideEffects None, 5 s, Ignore, reinvocation, system namespaces excluded (hostNetwork pods are not: injection refuses them)', () => {
      const [config] = byKind(base, 'MutatingWebhookConfiguration');
      assert.equal(config.webhooks.length, 2);
      for (const w of config.webhooks) {
        assert.equal(w.sideEffects, 'None');
        assert.equal(w.timeoutSeconds, 5);
        assert.equal(w.failurePolicy, 'Ignore');
        assert.equal(w.reinvocationPolicy, 'IfNeeded');
        assert.deepEqual(w.admissionReviewVersions, ['v1']);
        assert.equal(w.clientConfig.service.path, '/mutate');
        const names = w.namespaceSelector.matchExpressions.find((e: Json) => e.key === 'kubernetes.io/metadata.name');
        assert.deepEqual(names, { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: SYSTEM });
        assert.deepEqual(w.rules, [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' }]);
        assert.equal(w.matchConditions, undefined, 'no pod is kept from the injector by its spec');
      }
    });

    it('the policy bindings cover the same namespaces as the webhook', () => {
      const bindings = byKind(base, 'ValidatingAdmissionPolicyBinding');
      assert.equal(bindings.length, 2);
      for (const b of bindings) {
        assert.equal(b.spec.policyName, 'dpg-require-injection');
        assert.deepEqual(b.spec.validationActions, ['Deny']);
        assert.deepEqual(b.spec.matchResources.namespaceSelector.matchExpressions.find((e: Json) => e.key === 'kubernetes.io/metadata.name').values, SYSTEM);
      }
    });
  });

  describe('the policy CEL, evaluated', () => {
    const [policy] = byKind(base, 'ValidatingAdmissionPolicy');
    const [webhooks] = byKind(base, 'MutatingWebhookConfiguration');

    /** { applies, failures }: applies is false when a match condition excludes the pod. */
    function check(pod: Json): { applies: boolean; failures: string[] } {
      const ctx: Json = { object: pod };
      if (!policy.spec.matchConditions.every((m: Json) => evaluate(m.expression, ctx) === true)) return { applies: false, failures: [] };
      const variables: Json = {};
      for (const v of policy.spec.variables) variables[v.name] = evaluate(v.expression, { ...ctx, variables });
      const failures = policy.spec.validations
        .filter((v: Json) => evaluate(v.expression, { ...ctx, variables }) !== true)
        .map((v: Json) => (v.messageExpression ? evaluate(v.messageExpression, { ...ctx, variables }) : v.message));
      return { applies: true, failures };
    }
    // A pod from a template, as the API server sees it (a pod always has metadata).
    const asPod = (o: Json): Json => {
      const t = o.kind === 'Pod' ? o : o.kind === 'CronJob' ? o.spec.jobTemplate.spec.template : o.spec.template;
      return { metadata: {}, ...t };
    };
    const goldenPods = (suffix: string) =>
      readdirSync(GOLDEN)
        .filter((f) => f.endsWith(suffix) && (suffix !== '.yaml' || !f.endsWith('.injected.yaml')))
        .flatMap((f) => docs(readFileSync(join(GOLDEN, f), 'utf8')).flatMap((o) => (o.kind === 'List' ? o.items : [o])).filter((o) => o.spec && o.apiVersion !== 'example.com/v1' && o.kind !== 'Service' && o.kind !== 'ConfigMap').map((o) => ({ file: f, pod: asPod(o) })));

    it('names the containers and UID injection uses', () => {
      const text = JSON.stringify(policy);
      for (const name of Object.values(CONTAINER)) assert.ok(text.includes(`'${name}'`), name);
      assert.ok(text.includes(String(GATEWAY_UID)));
    });

    it('accepts every injected golden pod', () => {
      for (const { file, pod } of goldenPods('.injected.yaml')) {
        const r = check(pod);
        assert.deepEqual(r.failures, [], file);
      }
    });

    it('refuses the un-injected ones, except those opted out, on the host network or Windows', () => {
      for (const { file, pod } of goldenPods('.yaml')) {
        const r = check(pod);
        if (file === 'opted-out.yaml') assert.equal(r.applies, false, file);
        // An older layout is not the injection this policy knows; the webhook injects such a pod afresh.
        else if (file === 'reinject-upgrade.yaml' || file === 'upgrade-kubelet-volumes.yaml') assert.match(r.failures.join(), /not the injection its dpg.io\/status annotation records/, file);
        else assert.match(r.failures.join(), /requires the data protection sidecar/, file);
      }
    });

    it('refuses an injected pod whose app runs as UID 10001, directly or through the pod default', () => {
      const injected = goldenPods('.injected.yaml').find((p) => p.file === 'pod.injected.yaml')!.pod;
      const direct = structuredClone(injected);
      direct.spec.containers[0].securityContext = { runAsUser: 10001 };
      assert.match(check(direct).failures.join(), /UID 10001/);
      const inherited = structuredClone(injected);
      inherited.spec.securityContext = { runAsUser: 10001 };
      assert.match(check(inherited).failures.join(), /UID 10001/);
      const overridden = structuredClone(inherited);
      overridden.spec.containers[0].securityContext = { ...overridden.spec.containers[0].securityContext, runAsUser: 10002 };
      assert.deepEqual(check(overridden).failures, [], 'the gateway containers themselves run as 10001');
    });

    it('a proxy that is an init container without restartPolicy Always does not count', () => {
      const injected = structuredClone(goldenPods('.injected.yaml').find((p) => p.file === 'pod.injected.yaml')!.pod);
      for (const c of injected.spec.initContainers) delete c.restartPolicy;
      assert.match(check(injected).failures.join(), /requires the data protection sidecar/);
    });

    const golden = (file: string): Json => structuredClone(goldenPods('.injected.yaml').find((p) => p.file === file)!.pod);
    const SIDECAR = /requires the data protection sidecar/;
    const LAYOUT = /not the injection its dpg.io\/status annotation records/;
    const BYPASS = /could step around transparent capture/;
    const app = (p: Json): Json => p.spec.containers.find((c: Json) => !c.name.startsWith('dpg-'));
    const init = (p: Json, name: string): Json => p.spec.initContainers.find((c: Json) => c.name === name);

    describe('look-alikes of an injected pod are refused', () => {
      const plainApp = { name: 'app', image: 'shop:1', securityContext: { runAsUser: 1000 } };
      /** A golden injected pod with one change. */
      const from = (file: string, change: (p: Json) => unknown) => () => {
        const p = golden(file);
        change(p);
        return p;
      };
      const cases: [string, () => Json, RegExp][] = [
        ['a container of its own named dpg-proxy (the review\'s case)', () => ({ metadata: { name: 'p' }, spec: { containers: [{ name: 'dpg-proxy', image: 'busybox', command: ['sleep', 'inf'] }, plainApp] } }), SIDECAR],
        ['a native sidecar of its own named dpg-proxy', () => ({ metadata: { name: 'p' }, spec: { initContainers: [{ name: 'dpg-proxy', image: 'busybox', restartPolicy: 'Always' }], containers: [plainApp] } }), SIDECAR],
        ['the injected containers without the status annotation', from('pod.injected.yaml', (p) => delete p.metadata.annotations['dpg.io/status']), SIDECAR],
        ['a status that is not the injector\'s', from('pod.injected.yaml', (p) => (p.metadata.annotations['dpg.io/status'] = '{"captureMode":"transparent"}')), SIDECAR],
        ['dpg-init taken out (so no capture), the status unchanged', from('pod.injected.yaml', (p) => (p.spec.initContainers = p.spec.initContainers.filter((c: Json) => c.name !== 'dpg-init'))), LAYOUT],
        ['dpg-init running something else than dpg capture', from('pod.injected.yaml', (p) => (init(p, 'dpg-init').command = ['sh', '-c', 'true'])), LAYOUT],
        ['dpg-init with an argument injection never writes', from('pod.injected.yaml', (p) => init(p, 'dpg-init').args.splice(-2, 0, '--remove')), LAYOUT],
        ['dpg-init from another image than the gateway', from('pod.injected.yaml', (p) => (init(p, 'dpg-init').image = 'busybox')), LAYOUT],
        ['dpg-proxy running something else than dpg serve', from('pod.injected.yaml', (p) => (init(p, 'dpg-proxy').args = ['sleep', 'inf'])), LAYOUT],
        ['a pod init container moved before dpg-init', from('ca-containers.injected.yaml', (p) => p.spec.initContainers.unshift(p.spec.initContainers.pop())), LAYOUT],
        ['the legacy layout with dpg-proxy not first', from('legacy.injected.yaml', (p) => p.spec.containers.reverse()), LAYOUT],
        ['a status whose capture mode contradicts the pod annotation', from('env-proxy.injected.yaml', (p) => (p.metadata.annotations['dpg.io/capture-mode'] = 'transparent')), LAYOUT],
        ['an older injection (another layout): the webhook would inject it afresh', () => asPod(docs(readFileSync(join(GOLDEN, 'reinject-upgrade.yaml'), 'utf8'))[0]), LAYOUT],
      ];
      for (const [what, make, message] of cases) {
        it(what, () => assert.match(check(make()).failures.join('\n'), message));
      }
    });

    describe('app containers that could step around capture', () => {
      const cases: [string, (p: Json) => void, boolean][] = [
        ['privileged', (p) => (app(p).securityContext = { privileged: true, capabilities: { drop: ['ALL'] } }), false],
        ['NET_ADMIN added', (p) => (app(p).securityContext.capabilities.add = ['NET_ADMIN']), false],
        ['cap_net_raw added (any spelling)', (p) => (app(p).securityContext.capabilities.add = ['cap_net_raw']), false],
        ['the drops injection added taken out again (root keeps SETUID)', (p) => delete app(p).securityContext, false],
        ['only part of the drops', (p) => (app(p).securityContext.capabilities.drop = ['NET_RAW', 'SETUID']), false],
        ['SYS_PTRACE with a shared process namespace', (p) => {
          p.spec.shareProcessNamespace = true;
          app(p).securityContext.capabilities.add = ['SYS_PTRACE'];
        }, false],
        ['an init container of the pod, privileged', (p) => p.spec.initContainers.push({ name: 'setup', image: 'x', securityContext: { privileged: true } }), false],
        ['SYS_MODULE added (issue 16 class 13)', (p) => (app(p).securityContext.capabilities.add = ['SYS_MODULE']), false],
        ['BPF with PERFMON added', (p) => (app(p).securityContext.capabilities.add = ['BPF', 'PERFMON']), false],
        ['DAC_READ_SEARCH added', (p) => (app(p).securityContext.capabilities.add = ['cap_dac_read_search']), false],
        ['SYS_RAWIO added', (p) => (app(p).securityContext.capabilities.add = ['SYS_RAWIO']), false],
        ['a capability nobody listed', (p) => (app(p).securityContext.capabilities.add = ['SOMETHING_NEW']), false],
        ['the container runtime socket mounted from the host', (p) => {
          p.spec.volumes.push({ name: 'sock', hostPath: { path: '/run/containerd/containerd.sock' } });
          app(p).volumeMounts.push({ name: 'sock', mountPath: '/sock' });
        }, false],
        ['capabilities of the allow list added', (p) => (app(p).securityContext.capabilities.add = ['CHOWN', 'cap_net_bind_service', 'IPC_LOCK']), true],
        ['a host path of logs mounted', (p) => {
          p.spec.volumes.push({ name: 'logs', hostPath: { path: '/var/log' } });
          app(p).volumeMounts.push({ name: 'logs', mountPath: '/logs' });
        }, true],
        ['drop ALL instead', (p) => (app(p).securityContext.capabilities = { drop: ['ALL'] }), true],
        ['non-root without privilege escalation, no capabilities', (p) => (app(p).securityContext = { runAsUser: 1000, allowPrivilegeEscalation: false }), true],
        ['SYS_PTRACE without a shared process namespace', (p) => (app(p).securityContext.capabilities.add = ['SYS_PTRACE']), true],
        ['privileged, named in dpg.io/allow-capture-bypass', (p) => {
          app(p).securityContext = { privileged: true };
          p.metadata.annotations['dpg.io/allow-capture-bypass'] = ' other, web';
        }, true],
      ];
      for (const [what, change, allowed] of cases) {
        it(`${allowed ? 'allowed' : 'refused'}: ${what}`, () => {
          const p = golden('pod.injected.yaml');
          change(p);
          const failures = check(p).failures.join('\n');
          if (allowed) assert.equal(failures, '');
          else assert.match(failures, /dpg: container\(s\) (web|setup) could step around transparent capture/);
        });
      }

      it('not in env-proxy mode: there is no capture to step around', () => {
        const p = golden('env-proxy.injected.yaml');
        app(p).securityContext = { privileged: true };
        assert.deepEqual(check(p).failures, []);
      });

      // The policy and inject() must say the same: for each generated app container, inject() refuses
      // it exactly when the policy refuses the pod injection would have made had it not refused
      // (the same pod injected with the container allowed, then the allowance taken away).
      it('agrees with inject() on generated containers', () => {
        const options = testOptions();
        const maybe = <T,>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
        const capability = fc.constantFrom('NET_ADMIN', 'net_raw', 'CAP_SETUID', 'SETGID', 'SYS_ADMIN', 'SYS_PTRACE', 'ALL', 'CHOWN', 'NET_BIND_SERVICE', 'SYS_MODULE', 'BPF', 'cap_perfmon', 'IPC_LOCK', 'KILL', 'DAC_READ_SEARCH');
        const securityContext = fc.record(
          {
            privileged: maybe(fc.boolean()),
            runAsUser: maybe(fc.constantFrom(0, 1000, 10002)),
            runAsNonRoot: maybe(fc.boolean()),
            allowPrivilegeEscalation: maybe(fc.boolean()),
            capabilities: maybe(fc.record({ add: maybe(fc.uniqueArray(capability, { maxLength: 2 })), drop: maybe(fc.uniqueArray(capability, { maxLength: 4 })) })),
          },
          { requiredKeys: [] },
        );
        const podArb = fc.record({
          container: maybe(securityContext),
          podContext: maybe(fc.record({ runAsUser: maybe(fc.constantFrom(0, 1000)), runAsNonRoot: maybe(fc.boolean()) }, { requiredKeys: [] })),
          shareProcessNamespace: maybe(fc.boolean()),
        });
        const seen = { injected: 0, bypass: 0, other: 0 };
        const clean = (v: unknown) => JSON.parse(JSON.stringify(v ?? null)) ?? undefined;
        fc.assert(
          fc.property(podArb, ({ container, podContext, shareProcessNamespace }) => {
            const spec: Json = { containers: [{ name: 'app', image: 'a', ...(container ? { securityContext: clean(container) } : {}) }] };
            if (podContext) spec.securityContext = clean(podContext);
            if (shareProcessNamespace !== undefined) spec.shareProcessNamespace = shareProcessNamespace;
            const template = { metadata: { name: 'p' }, spec };
            const r = inject(template, options);
            seen[r.outcome === 'refused' ? (BYPASS.test(r.problems.join()) ? 'bypass' : 'other') : 'injected']++;
            if (r.outcome === 'injected') {
              assert.deepEqual(check(r.template).failures, [], JSON.stringify(template));
              return;
            }
            assert.equal(r.outcome, 'refused');
            const problems = r.outcome === 'refused' ? r.problems.join() : '';
            if (!BYPASS.test(problems)) return; // refused for another reason (UID 10001): covered above
            const allowed = inject({ metadata: { name: 'p', annotations: { 'dpg.io/allow-capture-bypass': 'app' } }, spec }, options);
            assert.equal(allowed.outcome, 'injected');
            const unallowed = structuredClone(allowed.template) as Json;
            delete unallowed.metadata.annotations['dpg.io/allow-capture-bypass'];
            assert.match(check(unallowed).failures.join(), BYPASS, JSON.stringify(template));
          }),
          { numRuns: 300 },
        );
        // Both sides of the rule were exercised.
        assert.ok(seen.injected > 20 && seen.bypass > 20, JSON.stringify(seen));
      });
    });

    it('issue 16: a hostNetwork pod is refused unless opted out; hostPID and hostIPC in transparent mode', () => {
      const hostNetwork = { metadata: { name: 'n' }, spec: { hostNetwork: true, containers: [{ name: 'a', image: 'a' }] } };
      assert.match(check(hostNetwork).failures[0], /a hostNetwork pod cannot be protected/);
      assert.equal(check({ ...hostNetwork, metadata: { name: 'n', labels: { 'dpg.io/inject': 'disabled' } } }).applies, false);
      for (const key of ['hostPID', 'hostIPC']) {
        const p = golden('pod.injected.yaml');
        p.spec[key] = true;
        assert.match(check(p).failures.join(), /shares the node's process or IPC namespace/, key);
        const env = golden('env-proxy.injected.yaml');
        env.spec[key] = true;
        assert.deepEqual(check(env).failures, [], `${key} in env-proxy mode`);
      }
    });

    it('issue 16 class 13: the policy uses the same allow list and host paths as inject() (one list, checked equal)', () => {
      const expression = (name: string) => policy.spec.variables.find((v: Json) => v.name === name).expression;
      const unshared = evaluate(expression('allowedAdds'), { object: { spec: {} } });
      const shared = evaluate(expression('allowedAdds'), { object: { spec: { shareProcessNamespace: true } } });
      const hostPid = evaluate(expression('allowedAdds'), { object: { spec: { hostPID: true } } });
      assert.deepEqual(unshared, [...ALLOWED_ADDS, ...ALLOWED_UNSHARED_ADDS]);
      assert.deepEqual(shared, [...ALLOWED_ADDS]);
      assert.deepEqual(hostPid, [...ALLOWED_ADDS]);
      assert.deepEqual(evaluate(expression('forbiddenHostPaths'), {}), [...FORBIDDEN_HOST_PATHS]);
    });

    it('issue 16 class 13: the policy and forbiddenHostPath() agree on host paths', () => {
      const paths = ['/', '/var', '/var/', '/var/run', '/var/run/docker.sock', '/run/containerd/containerd.sock', '/proc', '/proc/1', '/sys/fs', '/dev/mem', '/var/lib', '/var/lib/kubelet/x',
        '/var/log', '/variable', '/runner', '/procedures', '/data', '/etc/app', '/var/./run', '/var/../run', '//run', 'run', '', '/run/', '/devices'];
      for (const path of paths) {
        const p = golden('pod.injected.yaml');
        p.spec.volumes.push({ name: 'h', hostPath: { path } });
        app(p).volumeMounts = [...(app(p).volumeMounts ?? []), { name: 'h', mountPath: '/h' }];
        const refusedByPolicy = BYPASS.test(check(p).failures.join());
        assert.equal(refusedByPolicy, forbiddenHostPath(path) !== undefined, JSON.stringify(path));
      }
    });
  });

  describe('the example', () => {
    it('its workloads inject into schema-valid objects', async () => {
      const text = readFileSync(join(DEPLOY, 'examples', 'shop', 'orders.yaml'), 'utf8');
      const r = injectStream(text, testOptions());
      assert.ok(r.output, JSON.stringify(r.reports));
      assert.deepEqual(r.reports.map((x) => x.outcome), ['injected', 'injected']);
      assert.deepEqual(await validateObjects(docs(r.output).map((object, i) => ({ label: `orders#${i + 1}`, object }))), []);
    });

    it("its gateway config and manifests load (the sidecar profile)", (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'dpg-example-'));
      try {
        cpSync(join(DEPLOY, 'examples', 'shop', 'gateway'), dir, { recursive: true });
        const { config, problems } = loadConfig({ file: join(dir, 'gateway.yaml') });
        const profileMissing = problems.length > 0 && problems.every((p) => /enabled/.test(`${p.path ?? ''} ${p.message}`));
        if (profileMissing) {
          t.skip('the sidecar profile (http.enabled/grpc.enabled, issue 9) is not in this build yet');
          return;
        }
        assert.deepEqual(problems, []);
        assert.ok(config);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('its keyring is a valid keyring document', () => {
      const doc = parse(readFileSync(join(DEPLOY, 'examples', 'shop', 'gateway', 'keyring.example.yaml'), 'utf8'));
      assert.equal(Buffer.from(doc.keys[0].versions[0].material, 'base64').length, 32);
    });
  });
});

