// Runs a pod spec's containers the way the kubelet would, on this machine, on the namespaces of
// test/helpers/netns.ts: one anonymous network namespace for the pod (with the pod's /etc/hosts
// and a veth to a second one playing "the internet"), and for each container a private mount
// namespace where its volumeMounts are bound at their mountPaths, then its command run with its env,
// UID/GID and capabilities. Everything goes when close() runs or the test process ends. Root only.
// `dpg` in a container is this repository's bin/dpg.js (the image's ENTRYPOINT).

import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createNamespace, link, setprivArgs, type Namespace, type RunResult } from '../../helpers/netns.ts';
import { kubeletWrite } from '../../helpers/kubelet-atomic-writer.ts';

type Json = Record<string, any>;

const REPO = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..', '..');

export const POD_IP = '198.51.100.2';
export const UPSTREAM_IP = '198.51.100.1';

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export class PodSandbox {
  readonly dir: string;
  private readonly bin: string;
  private volumes = new Map<string, string>();

  /**
   * The pod's namespaces, linked. `hosts`: names every container of the pod resolves (like
   * spec.hostAliases; the kubelet manages one /etc/hosts per pod).
   */
  static async create(spec: Json, secrets: Record<string, Record<string, string>>, options: { hosts?: Record<string, string> } = {}): Promise<PodSandbox> {
    const upstream = await createNamespace('upstream');
    const pod = await createNamespace('pod', { hosts: options.hosts }).catch(async (err) => {
      await upstream.close();
      throw err;
    });
    const sandbox = new PodSandbox(spec, secrets, pod, upstream);
    try {
      await link({ ns: pod, ifname: 'eth0', addresses: [`${POD_IP}/24`] }, { ns: upstream, ifname: 'eth0', addresses: [`${UPSTREAM_IP}/24`] });
    } catch (err) {
      await sandbox.close();
      throw err;
    }
    return sandbox;
  }

  private constructor(
    private readonly spec: Json,
    private readonly secrets: Record<string, Record<string, string>>,
    readonly pod: Namespace,
    readonly upstream: Namespace,
  ) {
    // Not under /tmp: containers mount volumes there (dpg-init's /tmp), which would hide the sources.
    this.dir = mkdtempSync(join('/var/tmp', 'dpg-pod-'));
    chmodSync(this.dir, 0o755);
    this.bin = join(this.dir, 'bin');
    mkdirSync(this.bin, { mode: 0o755 });
    // The repository is bound at DIR/repo in each container first, so a volume mounted over its real
    // location (a clone under /tmp, and dpg-init's /tmp) cannot hide it.
    mkdirSync(join(this.dir, 'repo'), { mode: 0o755 });
    writeFileSync(join(this.bin, 'dpg'), `#!/bin/sh\nexec ${quote(process.execPath)} ${quote(join(this.dir, 'repo', 'bin', 'dpg.js'))} "$@"\n`, { mode: 0o755 });
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
        // Written as the kubelet writes it (timestamped directory, `..data` symlink), so the gateway
        // meets the layout it follows in a real pod.
        kubeletWrite(path, itemsOf(v.configMap.items, data), v.configMap.defaultMode ?? 0o644);
        chmodSync(path, 0o755);
      } else if (v.secret) {
        const data = this.secrets[v.secret.secretName] ?? {};
        kubeletWrite(path, itemsOf(v.secret.items, data), v.secret.defaultMode ?? 0o644);
        chmodSync(path, 0o755);
      }
      this.volumes.set(v.name, path);
    }
  }

  /** A volume backed by an existing directory (the app's "image" content in tests). */
  addVolume(name: string, path: string): void {
    this.volumes.set(name, path);
  }

  /** Runs a process in the upstream namespace (the test's servers), as root. */
  startUpstream(args: string[]): ChildProcess {
    return this.upstream.spawn(args[0]!, args.slice(1));
  }

  /** The shell script that enters a container: mounts, then setpriv + env + its command. */
  private script(container: Json, command: string[]): string {
    const lines = [
      'set -e',
      `mount --bind ${quote(REPO)} ${quote(join(this.dir, 'repo'))}`,
      `scratch=$(mktemp -d -p ${quote(this.dir)})`,
      'mount -t tmpfs sandbox "$scratch"',
      // The pod's /etc/hosts (a bind mount of the namespace): kept, in case an overlay covers /etc.
      'cp /etc/hosts "$scratch/hosts"',
    ];
    const overlaid = new Set<string>();
    const mounts = [...(container.volumeMounts ?? [])].sort((a: Json, b: Json) => a.mountPath.length - b.mountPath.length);
    // The gateway's own directories on a mount's path (/etc/dpg, /var/lib/dpg, /var/run/dpg) start
    // empty, as in the image: whatever this host has there (an installed gateway's files, a mode
    // that shuts out UID 10001) must not show through around the volumes.
    const privateRoots = privateRootsOf(mounts.map((m: Json) => m.mountPath as string));
    const insidePrivate = (path: string) => privateRoots.some((r) => path === r || path.startsWith(`${r}/`));
    // Make each mount path's parent writable inside this mount namespace only (an overlay on the
    // nearest existing ancestor), so nothing is created on the host's filesystem.
    const prepare = (target: string, isFile: boolean) => {
      if (insidePrivate(dirname(target))) {
        lines.push(isFile ? `mkdir -p ${quote(dirname(target))} && touch ${quote(target)}` : `mkdir -p ${quote(target)}`);
        return;
      }
      let ancestor = dirname(target);
      while (!existsSync(ancestor)) ancestor = dirname(ancestor);
      if (!overlaid.has(ancestor) && !(existsSync(target) && !isFile)) {
        const n = overlaid.size;
        overlaid.add(ancestor);
        lines.push(`mkdir -p "$scratch/u${n}" "$scratch/w${n}"`, `mount -t overlay overlay -o lowerdir=${ancestor},upperdir="$scratch/u${n}",workdir="$scratch/w${n}" ${ancestor}`);
      }
      lines.push(isFile ? `mkdir -p ${quote(dirname(target))} && touch ${quote(target)}` : `mkdir -p ${quote(target)}`);
    };
    for (const root of privateRoots) {
      prepare(root, false);
      lines.push(`mount -t tmpfs -o mode=0755 dpg-image ${quote(root)}`);
    }
    for (const m of mounts) {
      const source = this.volumes.get(m.name);
      if (!source) throw new Error(`volume ${m.name} is not prepared`);
      const from = m.subPath ? join(source, m.subPath) : source;
      prepare(m.mountPath, Boolean(m.subPath));
      lines.push(`mount --bind ${quote(from)} ${quote(m.mountPath)}`);
      if (m.readOnly) lines.push(`mount -o remount,bind,ro ${quote(m.mountPath)}`);
    }
    lines.push('mount --bind "$scratch/hosts" /etc/hosts');
    const sc = container.securityContext ?? {};
    const podSc = this.spec.securityContext ?? {};
    // readOnlyRootFilesystem: the root mount read-only in this mount namespace only; volumes stay as mounted.
    if (sc.readOnlyRootFilesystem) {
      lines.push('mount -o remount,bind,ro /');
      for (const root of privateRoots) lines.push(`mount -o remount,ro ${quote(root)}`);
    }
    const uid = sc.runAsUser ?? podSc.runAsUser ?? 0;
    const env: string[] = [`PATH=${this.bin}:/usr/local/bin:/usr/bin:/bin`, 'HOME=/tmp'];
    for (const e of container.env ?? []) {
      if (e.value !== undefined) env.push(`${e.name}=${e.value}`);
      else if (e.valueFrom?.secretKeyRef) env.push(`${e.name}=${this.secrets[e.valueFrom.secretKeyRef.name]?.[e.valueFrom.secretKeyRef.key] ?? ''}`);
    }
    const privs = setprivArgs({
      uid,
      gid: sc.runAsGroup ?? podSc.runAsGroup ?? uid,
      capabilities: sc.capabilities?.add ?? [],
      noNewPrivs: sc.allowPrivilegeEscalation === false,
    });
    lines.push(`cd /`, `exec ${[...privs, 'env', '-i', ...env, ...command].map(quote).join(' ')}`);
    return lines.join('\n');
  }

  /** The container's script, in its own mount namespace inside the pod's namespaces. */
  private entry(container: Json, command: string[]): [string, string[]] {
    const file = join(this.dir, `run-${container.name}-${randomBytes(2).toString('hex')}.sh`);
    writeFileSync(file, this.script(container, command), { mode: 0o700 });
    return ['unshare', ['--mount', '--propagation', 'private', 'sh', file]];
  }

  /** The container's command and args as the kubelet composes them (the image's ENTRYPOINT is dpg). */
  static commandOf(container: Json, entrypoint: string[]): string[] {
    return [...(container.command ?? entrypoint), ...(container.args ?? [])];
  }

  /** Runs a container to completion. */
  run(container: Json, command: string[], timeoutMs = 60_000): Promise<RunResult> {
    const [cmd, args] = this.entry(container, command);
    return this.pod.run(cmd, args, { timeoutMs });
  }

  /** Starts a long-running container (a sidecar); stopped by close(). */
  start(container: Json, command: string[]): ChildProcess {
    const [cmd, args] = this.entry(container, command);
    return this.pod.spawn(cmd, args);
  }

  /** Stops every process, closes both namespaces (and so the veth and the capture rules) and removes the files. */
  async close(): Promise<void> {
    await Promise.all([this.pod.close(), this.upstream.close()]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The outermost directory named dpg… on each mount path, below the path itself (`/etc/dpg` for `/etc/dpg/manifests`). */
function privateRootsOf(mountPaths: string[]): string[] {
  const roots = new Set<string>();
  for (const path of mountPaths) {
    const parts = path.split('/');
    const at = parts.findIndex((p) => p.startsWith('dpg'));
    if (at > 1 && at < parts.length - 1) roots.add(parts.slice(0, at + 1).join('/'));
  }
  return [...roots].sort((a, b) => a.length - b.length);
}

/** A ConfigMap's or Secret's files as a volume shows them: its `items` (key → path), else every key. */
function itemsOf(items: { key: string; path: string }[] | undefined, data: Record<string, string>): Record<string, string> {
  const chosen = items ?? Object.keys(data).map((key) => ({ key, path: key }));
  return Object.fromEntries(chosen.map((item) => [item.path, data[item.key] ?? '']));
}
