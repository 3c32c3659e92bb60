// `dpg inject` as users run it: a real process, files and stdin, stdout for the stream, stderr for
// notes and problems, exit codes 0 / 1 (refused: nothing written) / 2 (usage).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NO_KEYRING_WARNING } from '../../src/k8s/inject.ts';
import { injectStream } from '../../src/k8s/manual.ts';
import { injectorOptions, packageVersion } from '../../src/k8s/options.ts';

const GOLDEN = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, 'inject');

function dpg(args: string[], input?: string) {
  const r = spawnSync(process.execPath, ['bin/dpg.js', ...args], { input, encoding: 'utf8', timeout: 180_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('dpg inject', () => {
  it('is listed by dpg --help, with dpg webhook', () => {
    const r = dpg(['--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^\s*(dpg )?inject\s/m);
    assert.match(r.stdout, /^\s*(dpg )?webhook\s/m);
  });

  it('injects a file: the same stream the library gives, notes on stderr', () => {
    const file = join(GOLDEN, 'deployment.yaml');
    const r = dpg(['inject', '-f', file]);
    assert.equal(r.code, 0, r.stderr);
    const expected = injectStream(readFileSync(file, 'utf8'), injectorOptions({}).options!).output;
    assert.equal(r.stdout, expected);
    assert.match(r.stdout, new RegExp(`image: dpg:${packageVersion().replace(/\./g, '\\.')}`));
    assert.match(r.stderr, /document 1 deployment\/orders: injected\n {2}container app: capabilities NET_RAW, SETGID, SETUID dropped.*\n {2}container app: SSL_CERT_FILE already set/);
  });

  it('reads standard input with -f -, and takes --image and --default', () => {
    const r = dpg(['inject', '-f', '-', '--image', 'registry.example/dpg:1.2.3', '--default', 'dpg.io/capture-mode=env-proxy'], readFileSync(join(GOLDEN, 'pod.yaml'), 'utf8'));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /image: registry\.example\/dpg:1\.2\.3/);
    assert.match(r.stdout, /HTTPS_PROXY/);
    assert.doesNotMatch(r.stdout, /name: dpg-init/);
  });

  it('a refused document: exit 1, nothing on stdout, every problem on stderr', () => {
    const input = `${readFileSync(join(GOLDEN, 'pod.yaml'), 'utf8')}---
apiVersion: v1
kind: Pod
metadata:
  name: bad
  annotations:
    dpg.io/capture-mod: env-proxy
spec:
  containers:
    - name: app
      image: x
      securityContext:
        runAsUser: 10001
`;
    const r = dpg(['inject', '-f', '-'], input);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /document 2 pod\/bad: refused/);
    assert.match(r.stderr, /dpg\.io\/capture-mod: unknown annotation \(did you mean dpg\.io\/capture-mode\?\)/);
    assert.match(r.stderr, /runs as UID 10001/);
  });

  it('unreadable YAML: exit 1 with the line, nothing written', () => {
    const r = dpg(['inject', '-f', '-'], 'apiVersion: v1\nkind: Pod\nmetadata: {name: [\n');
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /YAML \w+ at line \d/);
  });

  it('--check: 0 for an injected stream, 1 (naming the workload) for one that is not', () => {
    const injected = dpg(['inject', '-f', join(GOLDEN, 'job.yaml')]).stdout;
    assert.equal(dpg(['inject', '--check', '-f', '-'], injected).code, 0);
    const r = dpg(['inject', '--check', '-f', join(GOLDEN, 'job.yaml')]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /job\/export: not injected as this version would inject it/);
  });

  it('--check warns on stderr about a pod without a keyring Secret, without failing; not about one with it', () => {
    const bare = dpg(['inject', '-f', join(GOLDEN, 'job.yaml')]).stdout;
    const r = dpg(['inject', '--check', '-f', '-'], bare);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `document 1 job/export: warning: ${NO_KEYRING_WARNING}\n`);
    const keyed = dpg(['inject', '--default', 'dpg.io/keyring=export-keyring', '-f', join(GOLDEN, 'job.yaml')]).stdout;
    const k = dpg(['inject', '--check', '--default', 'dpg.io/keyring=export-keyring', '-f', '-'], keyed);
    assert.equal(k.code, 0);
    assert.equal(k.stderr, '');
  });

  it('operational failures: exit 1 with a message of ours, not an internal error', () => {
    const cases: [string[], RegExp][] = [
      [['inject', '-f', '/nonexistent/dpg-workloads.yaml'], /dpg inject: cannot read "\/nonexistent\/dpg-workloads\.yaml" \(ENOENT\)/],
      [['webhook', '--tls-cert', '/nonexistent/tls.crt', '--tls-key', '/nonexistent/tls.key'], /dpg webhook: TLS certificate \/nonexistent\/tls\.crt could not be read/],
    ];
    for (const [args, message] of cases) {
      const r = dpg(args);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, message);
      assert.doesNotMatch(r.stderr, /INTERNAL/);
    }
    const outside = spawnSync(process.execPath, ['bin/dpg.js', 'webhook', 'certs', '--kube'], { encoding: 'utf8', env: { ...process.env, KUBERNETES_SERVICE_HOST: '' } });
    assert.equal(outside.status, 1);
    assert.match(outside.stderr, /not running in a Kubernetes pod/);
  });

  it('usage errors exit 2', () => {
    for (const args of [['inject'], ['inject', '-f', 'x', '--nope'], ['inject', '-f', 'x', '--default', 'keyring=x'], ['inject', '-f', 'x', 'extra']]) {
      const r = dpg(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /see dpg( inject)? --help/);
    }
  });
});
