// Runs a pod spec's containers the way the kubelet would, on this machine: one network namespace
// for the pod (with a veth to a second namespace playing "the internet"), and for each container a
// private mount namespace where its volumeMounts are bound at their mountPaths, then its command
// run with its env, UID/GID and capabilities (setpriv). Names are unique per run; close() removes
// everything. Root only. `dpg` in a container is this repository's bin/dpg.js (the image's ENTRYPOINT).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

type Json = Record<string, any>;

const REPO = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..', '..');

export const POD_IP = '198.51.100.2';
export const UPSTREAM_IP = '198.51.100.1';

/** Why the sandbox cannot run here, or undefined when it can. */
export function sandboxUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not running as root';
  for (const tool of ['ip', 'unshare', 'setpriv', 'iptables', 'mount']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed`;
  }
  const probe = `dpg-probe-${randomBytes(3).toString('hex')}`;
  if (spawnSync('ip', ['netns', 'add', probe]).status !== 0) return 'cannot create network namespaces here';
  spawnSync('ip', ['netns', 'del', probe]);
  return undefined;
}

function sh(command: string): void {
  const r = spawnSync('sh', ['-c', command], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command}: ${r.stderr}`);
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export interface ContainerRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export class PodSandbox {
  readonly pod: string;
  readonly upstream: string;
  readonly dir: string;
  private readonly bin: string;
  private readonly children: ChildProcess[] = [];
  private volumes = new Map<string, string>();
  /** The pod's /etc/hosts additions (like spec.hostAliases): every container sees them. */
  private hostAliases: Record<string, string> = {};

  constructor(private readonly spec: Json, private readonly secrets: Record<string, Record<string, string>>) {
    const id = randomBytes(3).toString('hex');
    this.pod = `dpg-sim-pod-${id}`;
    this.upstream = `dpg-sim-up-${id}`;
    // Not under /tmp: containers mount volumes there (dpg-init's /tmp), which would hide the sources.
    this.dir = mkdtempSync(join('/var/tmp', 'dpg-pod-'));
    chmodSync(this.dir, 0o755);
    this.bin = join(this.dir, 'bin');
    mkdirSync(this.bin, { mode: 0o755 });
    // The repository is bound at DIR/repo in each container first, so a volume mounted over its real
    // location (a clone under /tmp, and dpg-init's /tmp) cannot hide it.
    mkdirSync(join(this.dir, 'repo'), { mode: 0o755 });
    writeFileSync(join(this.bin, 'dpg'), `#!/bin/sh\nexec ${quote(process.execPath)} ${quote(join(this.dir, 'repo', 'bin', 'dpg.js'))} "$@"\n`, { mode: 0o755 });
    sh(`ip netns add ${this.pod} && ip netns add ${this.upstream}`);
    sh(`ip link add vp${id} type veth peer name vu${id}`);
    sh(`ip link set vp${id} netns ${this.pod} && ip link set vu${id} netns ${this.upstream}`);
    sh(`ip -n ${this.pod} addr add ${POD_IP}/24 dev vp${id} && ip -n ${this.pod} link set vp${id} up && ip -n ${this.pod} link set lo up`);
    sh(`ip -n ${this.upstream} addr add ${UPSTREAM_IP}/24 dev vu${id} && ip -n ${this.upstream} link set vu${id} up && ip -n ${this.upstream} link set lo up`);
  }

  /** Gives each volume of the pod a directory: ConfigMaps from `configMaps` (name → files), emptyDirs empty (mode 0777, like the kubelet's). */
  prepareVolumes(configMaps: Record<string, Record<string, string>>): void {
    for (const v of this.spec.volumes ?? []) {
      const path = join(this.dir, 'volumes', v.name);
      mkdirSync(path, { recursive: true });
      chmodSync(path, 0o777);
      if (v.configMap) {
        const data = configMaps[v.configMap.name];
        if (!data) throw new Error(`no ConfigMap ${v.configMap.name}`);
        const items: { key: string; path: string }[] = v.configMap.items ?? Object.keys(data).map((key) => ({ key, path: key }));
        for (const item of items) writeFileSync(join(path, item.path), data[item.key], { mode: 0o644 });
        chmodSync(path, 0o755);
      } else if (v.secret) {
        const data = this.secrets[v.secret.secretName];
        for (const [key, text] of Object.entries(data ?? {})) writeFileSync(join(path, key), text, { mode: v.secret.defaultMode ?? 0o644 });
        chmodSync(path, 0o755);
      }
      this.volumes.set(v.name, path);
    }
  }

  /** Names every container of the pod resolves (the kubelet manages one /etc/hosts per pod). */
  setHostAliases(aliases: Record<string, string>): void {
    this.hostAliases = { ...aliases };
  }

  /** A volume backed by an existing directory (the app's "image" content in tests). */
  addVolume(name: string, path: string): void {
    this.volumes.set(name, path);
  }

  /** Runs a process in the upstream namespace (the test's servers). */
  startUpstream(args: string[]): ChildProcess {
    const child = spawn('ip', ['netns', 'exec', this.upstream, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.children.push(child);
    return child;
  }

  /** The shell script that enters a container: mounts, then setpriv + env + its command. */
  private script(container: Json, command: string[]): string {
    const extraHosts = this.hostAliases;
    const lines = ['set -e', `mount --bind ${quote(REPO)} ${quote(join(this.dir, 'repo'))}`, `scratch=$(mktemp -d -p ${quote(this.dir)})`, 'mount -t tmpfs sandbox "$scratch"'];
    const overlaid = new Set<string>();
    // Make each mount path's parent writable inside this mount namespace only (an overlay on the
    // nearest existing ancestor), so nothing is created on the host's filesystem.
    const prepare = (target: string, isFile: boolean) => {
      let ancestor = dirname(target);
      while (!existsSync(ancestor)) ancestor = dirname(ancestor);
      if (!overlaid.has(ancestor) && !(existsSync(target) && !isFile)) {
        const n = overlaid.size;
        overlaid.add(ancestor);
        lines.push(`mkdir -p "$scratch/u${n}" "$scratch/w${n}"`, `mount -t overlay overlay -o lowerdir=${ancestor},upperdir="$scratch/u${n}",workdir="$scratch/w${n}" ${ancestor}`);
      }
      lines.push(isFile ? `mkdir -p ${quote(dirname(target))} && touch ${quote(target)}` : `mkdir -p ${quote(target)}`);
    };
    if (Object.keys(extraHosts).length > 0) {
      prepare('/etc/hosts', true);
      lines.push(`cat /etc/hosts > "$scratch/hosts"`, ...Object.entries(extraHosts).map(([h, ip]) => `echo ${quote(`${ip} ${h}`)} >> "$scratch/hosts"`), `mount --bind "$scratch/hosts" /etc/hosts`);
    }
    const mounts = [...(container.volumeMounts ?? [])].sort((a: Json, b: Json) => a.mountPath.length - b.mountPath.length);
    for (const m of mounts) {
      const source = this.volumes.get(m.name);
      if (!source) throw new Error(`volume ${m.name} is not prepared`);
      const from = m.subPath ? join(source, m.subPath) : source;
      prepare(m.mountPath, Boolean(m.subPath));
      lines.push(`mount --bind ${quote(from)} ${quote(m.mountPath)}`);
      if (m.readOnly) lines.push(`mount -o remount,bind,ro ${quote(m.mountPath)}`);
    }
    const sc = container.securityContext ?? {};
    const podSc = this.spec.securityContext ?? {};
    // readOnlyRootFilesystem: the root mount read-only in this mount namespace only; volumes stay as mounted.
    if (sc.readOnlyRootFilesystem) lines.push('mount -o remount,bind,ro /');
    const uid = sc.runAsUser ?? podSc.runAsUser ?? 0;
    const gid = sc.runAsGroup ?? podSc.runAsGroup ?? uid;
    const caps = (sc.capabilities?.add ?? []).map((c: string) => `+${c.toLowerCase()}`);
    const capList = ['-all', ...caps].join(',');
    const env: string[] = [`PATH=${this.bin}:/usr/local/bin:/usr/bin:/bin`, 'HOME=/tmp'];
    for (const e of container.env ?? []) {
      if (e.value !== undefined) env.push(`${e.name}=${e.value}`);
      else if (e.valueFrom?.secretKeyRef) env.push(`${e.name}=${this.secrets[e.valueFrom.secretKeyRef.name]?.[e.valueFrom.secretKeyRef.key] ?? ''}`);
    }
    const privs = ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', `--bounding-set=${capList}`, `--inh-caps=${capList}`];
    if (sc.allowPrivilegeEscalation === false) privs.push('--no-new-privs');
    lines.push(`cd /`, `exec ${[...privs, '--', 'env', '-i', ...env, ...command].map(quote).join(' ')}`);
    return lines.join('\n');
  }

  private spawnIn(container: Json, command: string[]): ChildProcess {
    const file = join(this.dir, `run-${container.name}-${randomBytes(2).toString('hex')}.sh`);
    writeFileSync(file, this.script(container, command), { mode: 0o700 });
    return spawn('ip', ['netns', 'exec', this.pod, 'unshare', '--mount', '--propagation', 'private', 'sh', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /** The container's command and args as the kubelet composes them (the image's ENTRYPOINT is dpg). */
  static commandOf(container: Json, entrypoint: string[]): string[] {
    return [...(container.command ?? entrypoint), ...(container.args ?? [])];
  }

  /** Runs a container to completion. */
  run(container: Json, command: string[], timeoutMs = 60_000): Promise<ContainerRun> {
    const child = this.spawnIn(container, command);
    return new Promise((resolve) => {
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (c: Buffer) => (stdout += c));
      child.stderr!.on('data', (c: Buffer) => (stderr += c));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** Starts a long-running container (a sidecar); stopped by close(). */
  start(container: Json, command: string[]): ChildProcess {
    const child = this.spawnIn(container, command);
    this.children.push(child);
    return child;
  }

  /** Stops every process, deletes both namespaces (and so the veth and the capture rules) and the files. */
  close(): void {
    for (const c of this.children) if (c.exitCode === null) c.kill('SIGKILL');
    // Processes inside a namespace keep it alive: kill what is left there first.
    for (const ns of [this.pod, this.upstream]) {
      spawnSync('sh', ['-c', `ip netns pids ${ns} 2>/dev/null | xargs -r kill -9`]);
      spawnSync('ip', ['netns', 'del', ns]);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
