// Transparent mode: app containers that could step around capture. inject() refuses those that ask
// for a way around it (privileged, NET_ADMIN, NET_RAW, SETUID, SETGID, SYS_ADMIN, ALL; SYS_PTRACE
// with a shared process namespace) or keep the runtime's defaults while setting capabilities
// themselves; it drops the defaults from those that say nothing; dpg.io/allow-capture-bypass names
// the exceptions, recorded in the notes. The admission policy's side is in deploy.test.ts.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inject, uninject, type JsonObject } from '../../src/k8s/inject.ts';
import { ALLOWED_ADDS, ALLOWED_UNSHARED_ADDS } from '../../src/k8s/capture-guard.ts';
import { injectorOptions } from '../../src/k8s/options.ts';
import { testOptions } from './helpers/options.ts';

const options = testOptions();

function pod(spec: JsonObject, annotations?: Record<string, string>): JsonObject {
  return { metadata: { name: 'p', ...(annotations ? { annotations } : {}) }, spec };
}
const app = (securityContext?: JsonObject, name = 'app'): JsonObject => ({ name, image: 'registry.example/app:1', ...(securityContext ? { securityContext } : {}) });

function refused(template: JsonObject): string {
  const r = inject(template, options);
  assert.equal(r.outcome, 'refused', `expected a refusal, got ${r.outcome}`);
  return r.outcome === 'refused' ? r.problems.join('\n') : '';
}

function injected(template: JsonObject) {
  const r = inject(template, options);
  assert.equal(r.outcome, 'injected', r.outcome === 'refused' ? r.problems.join('\n') : r.outcome);
  if (r.outcome !== 'injected') throw new Error('not injected');
  const spec = r.template.spec as { containers: JsonObject[]; initContainers: JsonObject[] };
  const find = (name: string) => [...spec.initContainers, ...spec.containers].find((c) => c.name === name)!;
  return { ...r, find };
}

const DROPS = { drop: ['NET_RAW', 'SETGID', 'SETUID'] };

describe('capture guard: refused app containers (transparent mode)', () => {
  const cases: [string, JsonObject, RegExp][] = [
    ['privileged', pod({ containers: [app({ privileged: true })] }), /"app" could step around transparent capture: privileged \(it could rewrite or remove the capture rules\)/],
    ['NET_ADMIN added', pod({ containers: [app({ capabilities: { add: ['NET_ADMIN'] } })] }), /adds NET_ADMIN \(it could rewrite or remove the capture rules\)/],
    ['NET_RAW added', pod({ containers: [app({ capabilities: { drop: ['ALL'], add: ['NET_RAW'] } })] }), /adds NET_RAW \(packet sockets/],
    ['SETUID added, even by a non-root container', pod({ containers: [app({ runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['SETUID'] } })] }), /adds SETUID \(it could switch to the gateway UID/],
    ['a lower-case, CAP_-prefixed name', pod({ containers: [app({ capabilities: { drop: ['ALL'], add: ['cap_sys_admin'] } })] }), /adds SYS_ADMIN/],
    ['ALL added', pod({ containers: [app({ capabilities: { add: ['ALL'] } })] }), /adds ALL/],
    ['SYS_PTRACE with a shared process namespace', pod({ shareProcessNamespace: true, containers: [app({ capabilities: { drop: ['ALL'], add: ['SYS_PTRACE'] } })] }), /adds SYS_PTRACE \(the pod shares its process namespace/],
    ['root with its own capabilities that keep the defaults', pod({ containers: [app({ capabilities: { add: ['NET_BIND_SERVICE'] } })] }), /keeps the default NET_RAW, SETGID, SETUID \(it may run as root/],
    ['root dropping only some of them', pod({ containers: [app({ capabilities: { drop: ['NET_RAW', 'SETUID'] } })] }), /keeps the default/],
    ['a non-root user that may escalate (setuid programs), with its own capabilities', pod({ containers: [app({ runAsUser: 1000, capabilities: { drop: ['NET_RAW'] } })] }), /keeps the default/],
    ['a user init container', pod({ initContainers: [app({ privileged: true }, 'setup')], containers: [app()] }), /"setup" could step around/],
    ['a pod-level runAsUser 0 does not make the container safe', pod({ securityContext: { runAsUser: 0, runAsNonRoot: true }, containers: [app({ capabilities: { add: ['CHOWN'] } })] }), /keeps the default/],
  ];
  for (const [what, template, message] of cases) {
    it(what, () => {
      const problems = refused(template);
      assert.match(problems, message);
      assert.match(problems, /dpg\.io\/allow-capture-bypass/, 'the message names the way out');
    });
  }

  // Issue 16 class 13: an allow list, so every capability not on it is refused, named or not.
  const dropAll = (add: string[]) => pod({ containers: [app({ capabilities: { drop: ['ALL'], add } })] });
  for (const cap of ['SYS_MODULE', 'BPF', 'PERFMON', 'DAC_READ_SEARCH', 'SYS_RAWIO', 'SYS_ADMIN', 'NET_ADMIN', 'SYS_TIME', 'SYS_BOOT', 'MAC_ADMIN', 'CHECKPOINT_RESTORE', 'SOMETHING_NEW']) {
    it(`issue 16 class 13: ${cap} added is not on the allow list`, () => assert.match(refused(dropAll([cap])), new RegExp(`adds ${cap} \\(`)));
  }
  it('issue 16 class 13: BPF with PERFMON: both named', () => {
    const problems = refused(dropAll(['BPF', 'PERFMON']));
    assert.match(problems, /adds BPF/);
    assert.match(problems, /adds PERFMON/);
  });
  it('issue 16 class 13: every capability of the allow list is accepted (SYS_PTRACE without a shared process namespace)', () => {
    injected(dropAll([...ALLOWED_ADDS, ...ALLOWED_UNSHARED_ADDS, 'cap_chown']));
  });
  it('issue 16 class 13: a non-ASCII spelling is not upper-cased into an allowed name (as CEL upperAscii reads it)', () => {
    assert.match(refused(dropAll(['ſys_chroot'])), /adds ſYS_CHROOT/);
  });

  const withHostPath = (path: unknown) => pod({ containers: [app({ capabilities: { drop: ['ALL'] } })], volumes: [{ name: 'h', hostPath: { path } }] });
  const mounted = (template: JsonObject) => {
    ((template.spec as { containers: JsonObject[] }).containers[0] as JsonObject).volumeMounts = [{ name: 'h', mountPath: '/h' }];
    return template;
  };
  for (const path of ['/var/run/docker.sock', '/run/containerd/containerd.sock', '/var/run/crio/crio.sock', '/proc', '/proc/1/ns', '/sys', '/sys/fs/bpf', '/var/run', '/run', '/run/', '/', '/var', '/var/lib', '/dev/mem', '/var/lib/kubelet/pods', '/var/./run', '/var/run/../run', '//run', 'run', '']) {
    it(`issue 16 class 13: a hostPath mount of ${JSON.stringify(path)} is refused`, () => assert.match(refused(mounted(withHostPath(path))), /mounts the host path/));
  }
  for (const path of ['/var/log', '/data/app', '/etc/app-config', '/variable', '/runner', '/procedures']) {
    it(`issue 16 class 13: a hostPath mount of ${path} is allowed`, () => {
      injected(mounted(withHostPath(path)));
    });
  }
  it('issue 16 class 13: a hostPath volume no app container mounts is not a way around', () => {
    injected(withHostPath('/var/run/docker.sock'));
  });

  it('a refused pod comes back unchanged', () => {
    const template = pod({ containers: [app({ privileged: true })] });
    assert.deepEqual(inject(template, options).template, template);
  });
});

describe('capture guard: what injection changes, and what it leaves', () => {
  it('a container that says nothing about capabilities loses NET_RAW, SETGID and SETUID, with a note and a status entry', () => {
    const r = injected(pod({ containers: [app({ runAsUser: 0 }), app(undefined, 'worker')], initContainers: [app(undefined, 'migrate')] }));
    for (const name of ['app', 'worker', 'migrate']) assert.deepEqual((r.find(name).securityContext as JsonObject).capabilities, DROPS, name);
    assert.equal((r.find('app').securityContext as JsonObject).runAsUser, 0, 'the rest of its securityContext is kept');
    assert.deepEqual(r.status.capabilityDrops, ['migrate', 'app', 'worker']);
    assert.ok(r.notes.some((n) => /^container worker: capabilities NET_RAW, SETGID, SETUID dropped/.test(n)));
  });

  it('so does a non-root one that may still escalate, and an empty capabilities object counts as saying nothing', () => {
    const r = injected(pod({ securityContext: { runAsNonRoot: true }, containers: [app({ capabilities: {} })] }));
    assert.deepEqual((r.find('app').securityContext as JsonObject).capabilities, DROPS);
  });

  const untouched: [string, JsonObject][] = [
    ['drops ALL (and adds a harmless one)', app({ capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } })],
    ['drops the three itself, spelt its own way', app({ capabilities: { drop: ['cap_setuid', 'CAP_SETGID', 'net_raw'] } })],
    ['runs as a non-root UID without privilege escalation', app({ runAsUser: 1000, allowPrivilegeEscalation: false })],
    ['runAsNonRoot without privilege escalation', app({ runAsNonRoot: true, allowPrivilegeEscalation: false })],
    ['adds SYS_PTRACE without a shared process namespace', app({ capabilities: { drop: ['ALL'], add: ['SYS_PTRACE'] } })],
  ];
  for (const [what, container] of untouched) {
    it(`left as it is: a container that ${what}`, () => {
      const r = injected(pod({ containers: [container] }));
      assert.deepEqual(r.find('app').securityContext, container.securityContext);
      assert.deepEqual(r.status.capabilityDrops, []);
      assert.ok(!r.notes.some((n) => /capabilities|capture/.test(n)), r.notes.join('\n'));
    });
  }

  it('env-proxy mode has no capture to step around: nothing refused, nothing dropped', () => {
    const r = injected(pod({ containers: [app({ privileged: true }), app(undefined, 'worker')] }, { 'dpg.io/capture-mode': 'env-proxy' }));
    assert.deepEqual(r.find('app').securityContext, { privileged: true });
    assert.equal(r.find('worker').securityContext, undefined);
    assert.deepEqual(r.status.capabilityDrops, []);
  });

  it('injecting again changes nothing, and taking the injection out gives the pod back', () => {
    const template = pod({ containers: [app({ runAsUser: 0 }), app(undefined, 'worker')] });
    const once = injected(template);
    assert.deepEqual(inject(once.template, options).template, once.template);
    assert.deepEqual(uninject(once.template), template);
  });

  it('a forged status cannot remove capabilities the pod set itself', () => {
    const own = { drop: ['ALL'], add: ['NET_BIND_SERVICE'] };
    const forged = JSON.stringify({ version: '9', configHash: 'x', captureMode: 'transparent', nativeSidecar: true, initContainers: [], containers: [], volumes: [], env: {}, trustMounts: [], capabilityDrops: ['app', 'worker'] });
    const ownDrops = { drop: ['SETUID', 'SETGID', 'NET_RAW'] };
    const r = injected(pod({ containers: [app({ capabilities: own }), app({ runAsUser: 5, capabilities: ownDrops }, 'worker')] }, { 'dpg.io/status': forged }));
    assert.deepEqual((r.find('app').securityContext as JsonObject).capabilities, own);
    // Exactly a drop list of those names: taken out, then given again, so the container ends up with the same three.
    assert.deepEqual(new Set(((r.find('worker').securityContext as JsonObject).capabilities as { drop: string[] }).drop), new Set(ownDrops.drop));
  });
});

describe('capture guard: dpg.io/allow-capture-bypass', () => {
  it('lets the named containers keep what they ask for, and says so in the notes', () => {
    const r = injected(
      pod({ containers: [app({ capabilities: { add: ['NET_ADMIN'] } }), app(undefined, 'nginx'), app(undefined, 'worker')] }, { 'dpg.io/allow-capture-bypass': ' nginx, app' }),
    );
    assert.deepEqual(r.find('app').securityContext, { capabilities: { add: ['NET_ADMIN'] } });
    assert.equal(r.find('nginx').securityContext, undefined, 'an allowed container is not given the drops either');
    assert.deepEqual((r.find('worker').securityContext as JsonObject).capabilities, DROPS, 'the others are guarded as usual');
    assert.ok(r.notes.includes('container app: may step around capture, allowed by dpg.io/allow-capture-bypass (adds NET_ADMIN; keeps the default NET_RAW, SETGID, SETUID)'), r.notes.join('\n'));
    assert.ok(r.notes.includes('container nginx: may step around capture, allowed by dpg.io/allow-capture-bypass (keeps the default NET_RAW, SETGID, SETUID)'), r.notes.join('\n'));
  });

  it('a name that needs no exemption is noted as such', () => {
    const r = injected(pod({ containers: [app({ capabilities: { drop: ['ALL'] } })] }, { 'dpg.io/allow-capture-bypass': 'app' }));
    assert.ok(r.notes.some((n) => /container app: .*allowed by dpg\.io\/allow-capture-bypass \(it needs no exemption\)/.test(n)));
  });

  it('unknown names, wildcards and empty values are refused', () => {
    assert.match(refused(pod({ containers: [app()] }, { 'dpg.io/allow-capture-bypass': 'ap' })), /allow-capture-bypass: no container named "ap"/);
    assert.match(refused(pod({ containers: [app()] }, { 'dpg.io/allow-capture-bypass': '*' })), /list of container names \(each named/);
    assert.match(refused(pod({ containers: [app()] }, { 'dpg.io/allow-capture-bypass': ' , ' })), /list of container names/);
  });

  it('is a per-pod decision: the injector has no default for it', () => {
    const { options: none, problems } = injectorOptions({ defaults: ['dpg.io/allow-capture-bypass=app'] }, '1');
    assert.equal(none, undefined);
    assert.match(problems.join('\n'), /--default dpg\.io\/allow-capture-bypass: a per-pod decision/);
  });

  it('changes the settings hash in the status', () => {
    const a = injected(pod({ containers: [app({ capabilities: { drop: ['ALL'] } })] }));
    const b = injected(pod({ containers: [app({ capabilities: { drop: ['ALL'] } })] }, { 'dpg.io/allow-capture-bypass': 'app' }));
    assert.notEqual(a.status.configHash, b.status.configHash);
  });
});
