// Network namespaces for whole-system tests (transparent capture, the Kubernetes pod simulation):
// each one is anonymous — held by a child process of the test (`unshare --net --mount`), gone when
// that child ends, so parallel runs never collide and a crashed test leaves nothing behind. It gets
// its own loopback, its own /etc/hosts (a private mount namespace) and, through veth pairs, links to
// other namespaces of the same test. Commands run inside with nsenter, as root or as another UID
// (setpriv), with exactly the environment given: no proxy variable leaks in from the test runner.
// The capture tests use it directly; the Kubernetes pod simulation (test/k8s/helpers/pod-sandbox.ts)
// builds its pod on it.
//
//   const skip = netnsSkipReason() ?? iptablesSkipReason();          // print it and skip when set
//   const world = await createNamespace('world');
//   const pod = await createNamespace('pod', { hosts: { 'api.partner.test': '198.51.100.10' } });
//   await link({ ns: pod, ifname: 'eth0', addresses: ['198.51.100.2/24'] },
//              { ns: world, ifname: 'eth0', addresses: ['198.51.100.10/24'] });
//   await pod.must('node', ['bin/dpg.js', 'capture']);                 // as root
//   const app = await pod.run('curl', ['-sS', 'http://api.partner.test/'], { uid: 10002, env: { HOME: userTempDir(10002) } });
//   await pod.close(); await world.close();
// Use addresses of the documentation ranges (198.51.100.0/24, 2001:db8::/32): they exist only here.

import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';

/** Who a command runs as: a UID/GID and the capabilities it may hold. */
export interface Identity {
  /** Run as this UID (and GID, default the same number); default root. */
  readonly uid?: number;
  readonly gid?: number;
  /** Only these capabilities (e.g. ['NET_ADMIN']), in the bounding and inheritable sets; default: no change. */
  readonly capabilities?: readonly string[];
  /** Set no_new_privs (Kubernetes' allowPrivilegeEscalation: false). */
  readonly noNewPrivs?: boolean;
}

export interface RunOptions extends Identity {
  /** The whole environment of the command (nothing is inherited); PATH is added when missing. */
  readonly env?: Record<string, string>;
  readonly cwd?: string;
  readonly input?: string;
  /** Killed after this long (default 60 s). */
  readonly timeoutMs?: number;
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Namespace {
  /** PID of the process holding the namespaces (for `ip link set … netns PID`). */
  readonly pid: number;
  readonly label: string;
  /** Runs a command inside and waits for it. Never throws for a non-zero exit: check `code`. */
  run(cmd: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /** Starts a long-lived command inside (a server, the gateway); killed by close() if still running. */
  spawn(cmd: string, args: readonly string[], options?: RunOptions): ChildProcess;
  /** Runs a command that must succeed (setup steps); throws with its output otherwise. */
  must(cmd: string, args: readonly string[], options?: RunOptions): Promise<string>;
  close(): Promise<void>;
}

const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The setpriv prefix that runs a command as `who` (empty for root with every capability). */
export function setprivArgs(who: Identity): string[] {
  if (who.uid === undefined && who.capabilities === undefined && !who.noNewPrivs) return [];
  const uid = who.uid ?? 0;
  const caps = who.capabilities && ['-all', ...who.capabilities.map((c) => `+${c.toLowerCase()}`)].join(',');
  return [
    'setpriv',
    `--reuid=${uid}`,
    `--regid=${who.gid ?? uid}`,
    '--clear-groups',
    ...(caps ? [`--bounding-set=${caps}`, `--inh-caps=${caps}`] : []),
    ...(who.noNewPrivs ? ['--no-new-privs'] : []),
    '--',
  ];
}

/** Why namespaces cannot be made here (one line for the skip message), or undefined when they can. */
export function netnsSkipReason(): string | undefined {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not running as root (network namespaces and iptables need it)';
  for (const tool of ['unshare', 'nsenter', 'setpriv', 'ip']) {
    if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).error) return `${tool} is not installed`;
  }
  const probe = spawnSync('unshare', ['--net', '--mount', '--', 'ip', 'link', 'set', 'lo', 'up'], { encoding: 'utf8' });
  if (probe.status !== 0) return `cannot create network namespaces here (${(probe.stderr || probe.error?.message || '').trim().split('\n')[0]})`;
  return undefined;
}

/** Why iptables cannot be used inside a namespace, or undefined. */
export function iptablesSkipReason(): string | undefined {
  const probe = spawnSync('unshare', ['--net', '--', 'iptables', '-t', 'nat', '-L', 'OUTPUT', '-n'], { encoding: 'utf8' });
  if (probe.error) return 'iptables is not installed (apt-get install iptables)';
  if (probe.status !== 0) return `iptables does not work in a namespace here (${(probe.stderr || '').trim().split('\n')[0]})`;
  return undefined;
}

/**
 * Why `dpg capture --backend legacy` cannot be tried inside a namespace (no iptables-legacy, or a
 * kernel without the x_tables nat table), or undefined. Debian's `iptables` package ships both backends.
 */
export function iptablesLegacySkipReason(): string | undefined {
  for (const tool of ['iptables-legacy', 'ip6tables-legacy', 'iptables-legacy-save', 'ip6tables-legacy-save']) {
    if (spawnSync(tool, ['--version'], { stdio: 'ignore', env: { PATH: BASE_PATH } }).error) return `${tool} is not installed (apt-get install iptables ships it on Debian)`;
  }
  for (const tool of ['iptables-legacy', 'ip6tables-legacy']) {
    const probe = spawnSync('unshare', ['--net', '--', tool, '-t', 'nat', '-L', 'OUTPUT', '-n'], { encoding: 'utf8', env: { PATH: BASE_PATH } });
    if (probe.status !== 0) return `${tool} does not work in a namespace here (${(probe.stderr || probe.error?.message || '').trim().split('\n')[0]})`;
  }
  return undefined;
}

/** A directory any UID can use (for per-user HOME/TMPDIR and shared files). */
export function sharedTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

/** A private writable directory for one UID (its HOME and TMPDIR). */
export function userTempDir(uid: number, gid = uid): string {
  const dir = mkdtempSync(join(tmpdir(), `dpg-u${uid}-`));
  chownSync(dir, uid, gid);
  chmodSync(dir, 0o700);
  return dir;
}

/**
 * Creates a namespace pair (network + mount) held by a child process. `hosts`: lines of its private
 * /etc/hosts (name → address), on top of localhost.
 */
export async function createNamespace(label: string, options: { hosts?: Record<string, string> } = {}): Promise<Namespace> {
  const hostsFile = join(sharedTempDir('dpg-hosts-'), 'hosts');
  const lines = ['127.0.0.1 localhost', '::1 localhost ip6-localhost ip6-loopback', ...Object.entries(options.hosts ?? {}).map(([name, address]) => `${address} ${name}`)];
  writeFileSync(hostsFile, lines.join('\n') + '\n', { mode: 0o644 });
  // The holder: loopback up, private /etc/hosts, then it waits on stdin. Our end of that pipe closes
  // when this process exits, whatever the reason, and the namespaces go with the holder.
  const script = `set -e; ip link set lo up; mount --bind "$1" /etc/hosts; echo ready; exec cat >/dev/null`;
  const holder = spawn('unshare', ['--net', '--mount', '--propagation', 'private', '--', 'sh', '-c', script, 'holder', hostsFile], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: BASE_PATH },
  });
  await new Promise<void>((resolve, reject) => {
    let err = '';
    holder.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    holder.stdout?.once('data', () => resolve());
    holder.once('exit', (code) => reject(new Error(`namespace ${label} could not be created (exit ${code}): ${err.trim()}`)));
  });
  holder.removeAllListeners('exit');
  const pid = holder.pid as number;
  const children = new Set<ChildProcess>();

  const command = (cmd: string, args: readonly string[], o: RunOptions): [string, string[], SpawnOptions] => {
    const env = { PATH: BASE_PATH, ...(o.env ?? {}) };
    return ['nsenter', ['-t', String(pid), '-n', '-m', '--', ...setprivArgs(o), cmd, ...args], { env, cwd: o.cwd ?? process.cwd() }];
  };

  const ns: Namespace = {
    pid,
    label,
    spawn(cmd, args, o = {}) {
      const [c, a, opts] = command(cmd, args, o);
      const child = spawn(c, a, { ...opts, stdio: ['pipe', 'pipe', 'pipe'] });
      children.add(child);
      child.once('exit', () => children.delete(child));
      return child;
    },
    run(cmd, args, o = {}) {
      const child = ns.spawn(cmd, args, o);
      return new Promise((resolve) => {
        let stdout = '';
        let stderr = '';
        child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 60_000);
        child.once('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr });
        });
        child.stdin?.on('error', () => undefined); // a command that never reads its input
        child.stdin?.end(o.input ?? '');
      });
    },
    async must(cmd, args, o = {}) {
      const r = await ns.run(cmd, args, o);
      if (r.code !== 0) throw new Error(`[${label}] ${cmd} ${args.join(' ')} failed (${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
      return r.stdout;
    },
    async close() {
      // Whatever still runs in the namespace — our children, and anything they left behind (a daemon's
      // workers) — is killed: a process of the namespace keeps it, and our pipes, alive.
      killNamespaceProcesses(pid);
      await Promise.all(
        [...children].map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.exitCode !== null || c.signalCode !== null) return resolve();
              c.once('exit', () => resolve());
              c.kill('SIGKILL');
            }),
        ),
      );
      await new Promise<void>((resolve) => {
        if (holder.exitCode !== null) return resolve();
        holder.once('exit', () => resolve());
        holder.stdin?.end();
        setTimeout(() => holder.kill('SIGKILL'), 2000).unref();
      });
      rmSync(dirname(hostsFile), { recursive: true, force: true });
    },
  };
  return ns;
}

/** SIGKILL to every process in the network namespace `holder` is in, except the holder itself. */
function killNamespaceProcesses(holder: number): void {
  let netns: string;
  try {
    netns = readlinkSync(`/proc/${holder}/ns/net`);
  } catch {
    return;
  }
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === holder || Number(entry) === process.pid) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/net`) === netns) process.kill(Number(entry), 'SIGKILL');
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
}

export interface LinkEnd {
  readonly ns: Namespace;
  /** Interface name inside that namespace (≤ 15 characters). */
  readonly ifname: string;
  /** CIDR addresses (IPv4 and IPv6) to assign. */
  readonly addresses: readonly string[];
}

/** A veth pair between two namespaces, both ends up with their addresses (IPv6 without DAD delay). */
export async function link(a: LinkEnd, b: LinkEnd): Promise<void> {
  // The peer is created under a temporary name: both ends may want the same name (eth0).
  const peer = `dpgpeer${Math.floor(Math.random() * 1e6)}`;
  await a.ns.must('ip', ['link', 'add', a.ifname, 'type', 'veth', 'peer', 'name', peer]);
  await a.ns.must('ip', ['link', 'set', peer, 'netns', String(b.ns.pid)]);
  await b.ns.must('ip', ['link', 'set', peer, 'name', b.ifname]);
  for (const end of [a, b]) {
    await end.ns.must('ip', ['link', 'set', end.ifname, 'up']);
    for (const cidr of end.addresses) {
      const v6 = cidr.includes(':');
      await end.ns.must('ip', [...(v6 ? ['-6'] : []), 'addr', 'add', cidr, 'dev', end.ifname, ...(v6 ? ['nodad'] : [])]);
    }
  }
}

/** Collects a child's stdout lines; `waitFor` resolves with the first line matching. */
export function lines(stream: Readable | null): { all(): string[]; waitFor(test: RegExp, timeoutMs?: number): Promise<string> } {
  const seen: string[] = [];
  const waiters: { test: RegExp; resolve(line: string): void }[] = [];
  let partial = '';
  stream?.on('data', (d: Buffer) => {
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      seen.push(line);
      for (const w of [...waiters]) {
        if (w.test.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  return {
    all: () => [...seen],
    waitFor(test, timeoutMs = 20_000) {
      const found = seen.find((l) => test.test(l));
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no line matching ${test} within ${timeoutMs} ms; got:\n${seen.slice(-20).join('\n')}`)), timeoutMs);
        waiters.push({
          test,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      });
    },
  };
}
