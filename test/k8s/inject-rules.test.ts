// The rules inject() enforces, case by case: what it refuses (with a message that says why and what
// to do), what it leaves alone, how annotations are read, and that a forged status cannot make it
// remove anything that is not its own.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inject, NO_KEYRING_WARNING, type JsonObject } from '../../src/k8s/inject.ts';
import { injectorOptions } from '../../src/k8s/options.ts';
import { applyAnnotations, BUILT_IN_DEFAULTS, canonicalCidrs, canonicalPorts } from '../../src/k8s/settings.ts';
import { testOptions } from './helpers/options.ts';

const options = testOptions();

function pod(spec: JsonObject, annotations?: Record<string, string>, labels?: Record<string, string>): JsonObject {
  const metadata: JsonObject = { name: 'p' };
  if (annotations) metadata.annotations = annotations;
  if (labels) metadata.labels = labels;
  return { metadata, spec };
}
const app = (extra: JsonObject = {}) => ({ name: 'app', image: 'registry.example/app:1', ...extra });

function problemsOf(template: JsonObject): string[] {
  const r = inject(template, options);
  assert.equal(r.outcome, 'refused', `expected a refusal, got ${r.outcome}`);
  return r.outcome === 'refused' ? [...r.problems] : [];
}

describe('inject() refuses what it cannot protect', () => {
  const cases: [string, JsonObject, RegExp][] = [
    ['an app container running as UID 10001', pod({ containers: [app({ securityContext: { runAsUser: 10001 } })] }), /"app" runs as UID 10001.*bypass capture/],
    ['a pod-level runAsUser of 10001 the container inherits', pod({ securityContext: { runAsUser: 10001 }, containers: [app()] }), /"app" runs as UID 10001/],
    ['an init container running as UID 10001', pod({ initContainers: [{ name: 'init', image: 'i', securityContext: { runAsUser: 10001 } }], containers: [app()] }), /"init" runs as UID 10001/],
    ['a container named like the gateway', pod({ containers: [app(), { name: 'dpg-proxy', image: 'fake' }] }), /"dpg-proxy" is reserved/],
    ['a volume named like the gateway', pod({ containers: [app()], volumes: [{ name: 'dpg-data', emptyDir: {} }] }), /volume name "dpg-data" is reserved/],
    ['an unknown dpg.io annotation, with a suggestion', pod({ containers: [app()] }, { 'dpg.io/exclude-outbound-port': '5432' }), /unknown annotation \(did you mean dpg\.io\/exclude-outbound-ports\?\)/],
    ['a port out of range', pod({ containers: [app()] }, { 'dpg.io/exclude-outbound-ports': '5432,70000' }), /ports 1-65535/],
    ['a flag smuggled into a CIDR list', pod({ containers: [app()] }, { 'dpg.io/exclude-outbound-cidrs': '10.0.0.0/8,--remove' }), /IPv4\/IPv6 addresses or CIDRs/],
    ['a bad capture mode', pod({ containers: [app()] }, { 'dpg.io/capture-mode': 'iptables' }), /'transparent' or 'env-proxy'/],
    ['a bad quantity', pod({ containers: [app()] }, { 'dpg.io/proxy-memory-limit': 'lots' }), /Kubernetes quantity/],
    ['a ConfigMap name that is not one', pod({ containers: [app()] }, { 'dpg.io/config': 'Gateway Config' }), /ConfigMap name/],
    ['ca-containers naming a container that does not exist', pod({ containers: [app()] }, { 'dpg.io/ca-containers': 'app,ap' }), /no container named "ap"/],
    ['the legacy layout for a run-to-completion pod', pod({ restartPolicy: 'Never', containers: [app()] }, { 'dpg.io/native-sidecar': 'false' }), /run-to-completion pod.*keep it running forever/],
    ['dpg.io/transparent-inspect with another value', pod({ containers: [app()] }, { 'dpg.io/transparent-inspect': 'everything' }), /dpg\.io\/transparent-inspect: must be 'routed' or 'all'/],
    ['dpg.io/transparent-inspect in env-proxy mode', pod({ containers: [app()] }, { 'dpg.io/transparent-inspect': 'all', 'dpg.io/capture-mode': 'env-proxy' }), /only applies in transparent capture mode/],
    ['a hostNetwork pod (issue 16: not left alone, it would run unprotected)', pod({ hostNetwork: true, containers: [app()] }), /hostNetwork pod: .*opt it out with the label dpg\.io\/inject=disabled/],
    ['a hostPID pod', pod({ hostPID: true, containers: [app({ securityContext: { capabilities: { drop: ['ALL'] } } })] }), /hostPID: /],
    ['a hostIPC pod', pod({ hostIPC: true, containers: [app({ securityContext: { capabilities: { drop: ['ALL'] } } })] }), /hostIPC: /],
  ];
  for (const [what, template, message] of cases) {
    it(what, () => {
      const problems = problemsOf(template);
      assert.ok(problems.some((p) => message.test(p)), problems.join('\n'));
    });
  }

  it('reports every problem at once', () => {
    const problems = problemsOf(pod({ containers: [app({ securityContext: { runAsUser: 10001 } })] }, { 'dpg.io/capture-mode': 'x', 'dpg.io/nope': 'y' }));
    assert.equal(problems.length, 3);
  });

  it('a refused pod comes back unchanged', () => {
    const template = pod({ containers: [app({ securityContext: { runAsUser: 10001 } })] });
    assert.deepEqual(inject(template, options).template, template);
  });
});

describe('inject() leaves some pods alone', () => {
  for (const [what, template, reason] of [
    ['opted out by label', pod({ containers: [app()] }, undefined, { 'dpg.io/inject': 'disabled' }), /opted out/],
    ['Windows', pod({ os: { name: 'windows' }, containers: [app()] }), /Windows/],
  ] as [string, JsonObject, RegExp][]) {
    it(what, () => {
      const r = inject(template, options);
      assert.equal(r.outcome, 'skipped');
      assert.match(r.outcome === 'skipped' ? r.reason : '', reason);
      assert.deepEqual(r.template, template);
    });
  }
});

describe('hostile input', () => {
  it('names that are Object.prototype properties are plain data (admission runs before validation)', () => {
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const template = JSON.parse(
        `{"metadata":{"annotations":{"__proto__":"x","dpg.io/status":"{\\"version\\":\\"1\\",\\"configHash\\":\\"x\\",\\"initContainers\\":[],\\"containers\\":[],\\"volumes\\":[],\\"env\\":{},\\"trustMounts\\":[]}"}},"spec":{"containers":[{"name":"${name}","image":"x","env":[{"name":"A","value":"b"}]}]}}`,
      ) as JsonObject;
      const once = inject(template, options);
      assert.equal(once.outcome, 'injected', name);
      assert.deepEqual(inject(once.template, options).template, once.template, name);
      assert.equal(Object.getPrototypeOf({}), Object.prototype);
    }
  });
});

describe('status annotation', () => {
  it('a forged status cannot remove the pod’s own containers, volumes or variables', () => {
    const forged = JSON.stringify({
      version: '9',
      configHash: 'x',
      captureMode: 'transparent',
      nativeSidecar: true,
      initContainers: ['migrate'],
      containers: ['app'],
      volumes: ['data'],
      env: { app: ['DATABASE_URL', 'SSL_CERT_FILE'] },
      trustMounts: ['app'],
    });
    const template = pod(
      {
        initContainers: [{ name: 'migrate', image: 'm' }],
        containers: [app({ env: [{ name: 'DATABASE_URL', value: 'postgres://db' }], volumeMounts: [{ name: 'data', mountPath: '/data' }] })],
        volumes: [{ name: 'data', emptyDir: {} }],
      },
      { 'dpg.io/status': forged },
    );
    const r = inject(template, options);
    assert.equal(r.outcome, 'injected');
    const spec = r.template.spec as { initContainers: JsonObject[]; containers: JsonObject[]; volumes: JsonObject[] };
    assert.ok(spec.initContainers.some((c) => c.name === 'migrate'));
    const mine = spec.containers.find((c) => c.name === 'app')!;
    assert.ok((mine.env as JsonObject[]).some((e) => e.name === 'DATABASE_URL'));
    assert.ok(spec.volumes.some((v) => v.name === 'data'));
  });

  it('an unreadable status is dropped and the pod injected normally', () => {
    const r = inject(pod({ containers: [app()] }, { 'dpg.io/status': '{not json' }), options);
    assert.equal(r.outcome, 'injected');
  });

  it('records the version and a hash that changes with the settings and the image', () => {
    const a = inject(pod({ containers: [app()] }), options);
    const b = inject(pod({ containers: [app()] }, { 'dpg.io/exclude-outbound-ports': '5432' }), options);
    const c = inject(pod({ containers: [app()] }), injectorOptions({ image: 'registry.example/dpg:9' }, '9.9.9').options!);
    assert.ok(a.outcome === 'injected' && b.outcome === 'injected' && c.outcome === 'injected');
    assert.equal(a.status.version, '0.0.0-test');
    assert.equal(c.status.version, '9.9.9');
    assert.notEqual(a.status.configHash, b.status.configHash);
    assert.notEqual(a.status.configHash, c.status.configHash);
  });
});

describe('settings', () => {
  it('ports and CIDRs come out canonical', () => {
    assert.equal(canonicalPorts(' 443, 80,443 ', false), '80,443');
    assert.equal(canonicalPorts('*', true), '*');
    assert.deepEqual(canonicalPorts('*', false), { error: 'must be a comma-separated list of ports 1-65535' });
    assert.deepEqual(canonicalCidrs('10.0.0.0/8, 169.254.169.254, FD00::/8'), ['10.0.0.0/8', '169.254.169.254/32', 'fd00::/8']);
    assert.ok(!Array.isArray(canonicalCidrs('10.0.0.0/33')));
    assert.ok(!Array.isArray(canonicalCidrs('example.com')));
  });

  it('pod annotations override the injector defaults; other prefixes are ignored', () => {
    const { options: withDefault } = injectorOptions({ defaults: ['dpg.io/keyring=platform', 'dpg.io/capture-mode=env-proxy'] }, '1');
    const { settings, problems } = applyAnnotations(withDefault!.defaults, { 'dpg.io/keyring': 'team', 'example.com/x': 'y' });
    assert.deepEqual(problems, []);
    assert.equal(settings.keyringSecret, 'team');
    assert.equal(settings.captureMode, 'env-proxy');
    assert.equal(BUILT_IN_DEFAULTS.captureMode, 'transparent');
  });

  it('bad injector flags are problems, not guesses', () => {
    const { options: none, problems } = injectorOptions({ image: 'has space', imagePullPolicy: 'Sometimes', defaults: ['keyring=x', 'dpg.io/capture-mode=x'] }, '1');
    assert.equal(none, undefined);
    assert.equal(problems.length, 4, problems.join('\n'));
  });
});

describe('the dpg-proxy environment (issue 16 classes 7 and 9)', () => {
  const proxyEnv = (annotations?: Record<string, string>): Record<string, unknown> => {
    const r = inject(pod({ containers: [app({ securityContext: { capabilities: { drop: ['ALL'] } } })] }, annotations), options);
    assert.equal(r.outcome, 'injected', r.outcome === 'refused' ? r.problems.join() : '');
    const spec = r.template.spec as { initContainers: JsonObject[] };
    const proxy = spec.initContainers.find((c) => c.name === 'dpg-proxy')!;
    return Object.fromEntries((proxy.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
  };

  it('transparent mode: the forward listener is off, the transparent one on; inspect only when asked', () => {
    const env = proxyEnv();
    assert.equal(env.DPG_PROXY_ADDR, 'off');
    assert.equal(env.DPG_TRANSPARENT_ADDR, '127.0.0.1:15006');
    assert.equal('DPG_TRANSPARENT_INSPECT' in env, false, "absent: the gateway config's choice");
    assert.equal(proxyEnv({ 'dpg.io/transparent-inspect': 'all' }).DPG_TRANSPARENT_INSPECT, 'all');
    assert.equal(proxyEnv({ 'dpg.io/transparent-inspect': 'routed' }).DPG_TRANSPARENT_INSPECT, 'routed');
  });

  it('env-proxy mode: the forward listener listens (its apps use it), no transparent listener', () => {
    const env = proxyEnv({ 'dpg.io/capture-mode': 'env-proxy' });
    assert.equal(env.DPG_PROXY_ADDR, '127.0.0.1:15001');
    assert.equal('DPG_TRANSPARENT_ADDR' in env, false);
  });

  it('the annotation can be an injector default, and changes the settings hash', () => {
    const { options: strict } = injectorOptions({ image: 'dpg:test', defaults: ['dpg.io/transparent-inspect=all'] }, '0.0.0-test');
    assert.ok(strict);
    const template = pod({ containers: [app({ securityContext: { capabilities: { drop: ['ALL'] } } })] });
    const a = inject(template, options);
    const b = inject(template, strict!);
    assert.ok(a.outcome === 'injected' && b.outcome === 'injected');
    assert.notEqual(a.status.configHash, b.status.configHash);
  });
});

describe('observability: default container, scrape annotations, admin port (issue 18 item 5)', () => {
  const locked = (name: string) => ({ name, image: 'i', securityContext: { capabilities: { drop: ['ALL'] } } });
  const injected = (template: JsonObject) => {
    const r = inject(template, options);
    assert.equal(r.outcome, 'injected', r.outcome === 'refused' ? r.problems.join() : '');
    return r.template as { metadata: { annotations: Record<string, string> }; spec: { initContainers: JsonObject[]; containers: JsonObject[] } };
  };
  const ours = (a: Record<string, string>) => Object.keys(a).filter((k) => k !== 'dpg.io/status' && k !== 'dpg.io/notes').sort();

  it('names the first app container as kubectl’s default and adds the three scrape annotations', () => {
    const t = injected(pod({ initContainers: [locked('migrate')], containers: [locked('web'), locked('worker')] }));
    const a = t.metadata.annotations;
    assert.equal(a['kubectl.kubernetes.io/default-container'], 'web');
    assert.equal(a['prometheus.io/scrape'], 'true');
    assert.equal(a['prometheus.io/port'], '15020');
    assert.equal(a['prometheus.io/path'], '/metrics');
    assert.deepEqual(JSON.parse(a['dpg.io/status']!).annotations, ['kubectl.kubernetes.io/default-container', 'prometheus.io/scrape', 'prometheus.io/port', 'prometheus.io/path']);
  });

  it('the legacy layout (gateway first in containers) still names the app container', () => {
    const t = injected(pod({ containers: [locked('web')] }, { 'dpg.io/native-sidecar': 'false' }));
    assert.equal(t.spec.containers[0]!.name, 'dpg-proxy');
    assert.equal(t.metadata.annotations['kubectl.kubernetes.io/default-container'], 'web');
  });

  it('a default container the user set is kept; any prometheus.io annotation keeps all of ours out', () => {
    const t = injected(pod({ containers: [locked('web'), locked('worker')] }, { 'kubectl.kubernetes.io/default-container': 'worker', 'prometheus.io/port': '9090' }));
    const a = t.metadata.annotations;
    assert.equal(a['kubectl.kubernetes.io/default-container'], 'worker');
    assert.equal(a['prometheus.io/port'], '9090');
    assert.equal('prometheus.io/scrape' in a, false);
    assert.equal('prometheus.io/path' in a, false);
    assert.equal(JSON.parse(a['dpg.io/status']!).annotations.length, 0);
  });

  it('re-injection is idempotent and takes out only the annotations it added', () => {
    const once = injected(pod({ containers: [locked('web')] }, { team: 'a' }));
    const twice = injected(once as unknown as JsonObject);
    assert.deepEqual(twice, once);
    // The user renames the app container: the default follows, the old one does not linger.
    const renamed = structuredClone(once) as unknown as { spec: { containers: JsonObject[] } };
    renamed.spec.containers[0]!.name = 'api';
    assert.equal(injected(renamed as unknown as JsonObject).metadata.annotations['kubectl.kubernetes.io/default-container'], 'api');
    assert.deepEqual(ours(once.metadata.annotations), ['kubectl.kubernetes.io/default-container', 'prometheus.io/path', 'prometheus.io/port', 'prometheus.io/scrape', 'team']);
  });

  it('a forged status cannot remove the user’s other annotations', () => {
    const forged = JSON.stringify({ version: '9', configHash: 'x', captureMode: 'transparent', nativeSidecar: true, initContainers: [], containers: [], volumes: [], env: {}, trustMounts: [], annotations: ['team', 'prometheus.io/port'] });
    const a = injected(pod({ containers: [locked('web')] }, { 'dpg.io/status': forged, team: 'a', 'prometheus.io/port': '9090' })).metadata.annotations;
    assert.equal(a.team, 'a');
    // prometheus.io/port is a key injection may add, so a status listing it takes it out: the scrape set is then ours.
    assert.equal(a['prometheus.io/port'], '15020');
  });

  it('dpg-proxy listens for the admin port on the pod IP and declares it as dpg-admin', () => {
    const proxy = injected(pod({ containers: [locked('web')] })).spec.initContainers.find((c) => c.name === 'dpg-proxy')!;
    const env = Object.fromEntries((proxy.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
    assert.equal(env.DPG_ADMIN_ADDR, '0.0.0.0:15020');
    assert.deepEqual(proxy.ports, [{ name: 'dpg-admin', containerPort: 15020, protocol: 'TCP' }]);
  });
});

describe('safe key defaults: a pod without a keyring Secret is warned about (issue 18 item 6)', () => {
  const locked = { name: 'web', image: 'i', securityContext: { capabilities: { drop: ['ALL'] } } };
  const warningsOf = (annotations?: Record<string, string>, o = options) => {
    const r = inject(pod({ containers: [locked] }, annotations), o);
    assert.equal(r.outcome, 'injected');
    return r.outcome === 'injected' ? r.warnings : [];
  };

  it('no dpg.io/keyring: one warning that says what goes wrong, and that the config was not read', () => {
    assert.deepEqual(warningsOf(), [NO_KEYRING_WARNING]);
    assert.match(NO_KEYRING_WARNING, /replicas would not share keys/);
    assert.match(NO_KEYRING_WARNING, /could not be reconstructed/);
    assert.match(NO_KEYRING_WARNING, /without reading the config/);
  });

  it('dpg.io/keyring on the pod, or as the injector default: no warning, and the warning is never written into the pod', () => {
    assert.deepEqual(warningsOf({ 'dpg.io/keyring': 'shop-keyring' }), []);
    const { options: keyed } = injectorOptions({ image: 'dpg:test', defaults: ['dpg.io/keyring=platform'] }, '0.0.0-test');
    assert.deepEqual(warningsOf(undefined, keyed!), []);
    const r = inject(pod({ containers: [locked] }), options);
    assert.equal(JSON.stringify(r.template).includes('keyring'), false);
  });
});

describe('inject() refuses a pod that already carries another gateway (issue 18 item 5)', () => {
  const cases: [string, JsonObject, RegExp][] = [
    ['the gateway image under another name', pod({ containers: [app(), { name: 'egress', image: 'dpg:other-tag', args: ['serve'] }] }), /container "egress" already looks like a gateway \(it runs the gateway image dpg\).*capture and protect twice/],
    ['the same image pinned by digest', pod({ initContainers: [{ name: 'net-setup', image: 'dpg@sha256:0123' }], containers: [app()] }), /"net-setup" already looks like a gateway/],
    ['`dpg capture` in another image', pod({ initContainers: [{ name: 'iptables', image: 'registry.example/tools:1', command: ['node', '/opt/dpg/bin/dpg.js', 'capture', '--proxy-uid', '2000'] }], containers: [app()] }), /"iptables" already looks like a gateway \(it runs `dpg capture`\)/],
    ['`dpg serve` in a shell line', pod({ containers: [app(), { name: 'sidecar', image: 'registry.example/base:1', command: ['sh', '-c', 'exec dpg serve --config /etc/dpg/gateway.yaml'] }] }), /"sidecar" already looks like a gateway \(it runs `dpg serve`\)/],
    ['the gateway variables', pod({ containers: [app(), { name: 'relay', image: 'registry.example/relay:1', env: [{ name: 'DPG_TRANSPARENT_ADDR', value: '127.0.0.1:15006' }] }] }), /"relay" already looks like a gateway \(it sets DPG_TRANSPARENT_ADDR\)/],
  ];
  for (const [what, template, expected] of cases) {
    it(what, () => assert.match(problemsOf(template).join('\n'), expected));
  }

  it('a service mesh sidecar (istio-proxy, linkerd-proxy) is no gateway: injected', () => {
    const meshed = pod({
      initContainers: [{ name: 'istio-init', image: 'docker.io/istio/proxyv2:1.24.0', args: ['istio-iptables', '-p', '15001', '-z', '15006', '-u', '1337'] }],
      containers: [app(), { name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.24.0', args: ['proxy', 'sidecar'], env: [{ name: 'ISTIO_META_POD_PORTS', value: '[]' }] }],
    });
    assert.equal(inject(meshed, options).outcome, 'injected');
  });

  it('re-injection by this injector is no second gateway', () => {
    const once = inject(pod({ containers: [app()] }), options);
    assert.equal(once.outcome, 'injected');
    assert.equal(inject(once.template, options).outcome, 'injected');
  });
});

describe('inject() beside a service mesh (issue 18 item 5)', () => {
  const find = (t: JsonObject, name: string): JsonObject => {
    const spec = t.spec as { initContainers?: JsonObject[]; containers: JsonObject[] };
    return [...(spec.initContainers ?? []), ...spec.containers].find((c) => c.name === name)!;
  };
  const envOf = (c: JsonObject): Record<string, unknown> => Object.fromEntries(((c.env as { name: string; value?: string }[]) ?? []).map((e) => [e.name, e.value]));

  it('Istio (its containers present): other ports, the mesh proxy UID exempt, a note', () => {
    const r = inject(pod({ containers: [app(), { name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.24.0', securityContext: { runAsUser: 1337 } }] }), options);
    assert.equal(r.outcome, 'injected');
    if (r.outcome !== 'injected') return;
    const args = find(r.template, 'dpg-init').args as string[];
    assert.deepEqual(args.slice(0, 7), ['capture', '--proxy-uid', '10001', '--redirect-port', '15106', '--exclude-uids', '1337']);
    const proxy = find(r.template, 'dpg-proxy');
    assert.equal(envOf(proxy).DPG_TRANSPARENT_ADDR, '127.0.0.1:15106');
    assert.equal(envOf(proxy).DPG_ADMIN_ADDR, '0.0.0.0:15120');
    assert.deepEqual(proxy.ports, [{ name: 'dpg-admin', containerPort: 15120, protocol: 'TCP' }]);
    assert.equal((r.template.metadata as { annotations: Record<string, string> }).annotations['prometheus.io/port'], '15120');
    assert.match(r.notes.join('\n'), /service mesh istio \(container istio-proxy\).*exempts the mesh proxy's UID 1337/);
  });

  it("Linkerd asked for by annotation, a mesh proxy's own runAsUser, and env-proxy mode's forward port", () => {
    const linkerd = inject(pod({ containers: [app()] }, { 'linkerd.io/inject': 'enabled' }), options);
    assert.equal(linkerd.outcome, 'injected');
    if (linkerd.outcome === 'injected') assert.ok((find(linkerd.template, 'dpg-init').args as string[]).join(' ').includes('--exclude-uids 2102'));
    const own = inject(pod({ containers: [app(), { name: 'istio-proxy', image: 'i', securityContext: { runAsUser: 7777 } }] }), options);
    if (own.outcome === 'injected') assert.ok((find(own.template, 'dpg-init').args as string[]).join(' ').includes('--exclude-uids 7777'));
    const envProxy = inject(pod({ containers: [app()] }, { 'dpg.io/capture-mode': 'env-proxy', 'sidecar.istio.io/inject': 'true' }), options);
    assert.equal(envProxy.outcome, 'injected');
    if (envProxy.outcome !== 'injected') return;
    assert.equal(envOf(find(envProxy.template, 'dpg-proxy')).DPG_PROXY_ADDR, '127.0.0.1:15101');
    assert.equal(envOf(find(envProxy.template, 'app')).HTTP_PROXY, 'http://127.0.0.1:15101');
  });

  it('a pod without a mesh keeps the usual ports and no UID exemption', () => {
    const r = inject(pod({ containers: [app()] }), options);
    if (r.outcome !== 'injected') return assert.fail(r.outcome);
    const args = (find(r.template, 'dpg-init').args as string[]).join(' ');
    assert.match(args, /--redirect-port 15006/);
    assert.doesNotMatch(args, /--exclude-uids/);
  });
});
