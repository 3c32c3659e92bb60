// Which app containers could step around transparent capture, and what injection does about it.
// Capture exempts the gateway's UID and lives in the pod's own netfilter rules, so a container that
// can change its UID (CAP_SETUID/SETGID as root, or through a setuid program), rewrite the rules
// (NET_ADMIN, privileged) or send packets past them (NET_RAW: packet sockets skip netfilter) could
// leave unprotected. Capabilities are checked against an allow list, host paths against the
// node's runtime and kernel interfaces, and the host namespaces are refused for the whole pod
// (hostNamespaceProblems). The same rule is written in CEL in deploy/kubernetes/base/require-injection-policy.yaml;
// test/k8s/deploy.test.ts evaluates both on the same pods.

type JsonObject = { [key: string]: unknown };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const objectsOf = (v: unknown): JsonObject[] => (Array.isArray(v) ? v.filter(isObject) : []);

/**
 * The capabilities an app container of a captured pod may add: an ALLOW list (issue 16 class 13), so
 * a capability nobody thought of (SYS_MODULE, BPF, PERFMON, DAC_READ_SEARCH, SYS_RAWIO, …) is
 * refused by construction. It is the container runtimes' default set (containerd, CRI-O, Docker)
 * less NET_RAW, SETUID and SETGID (CAPTURE_DROPS), plus IPC_LOCK and SYS_NICE (memory locking and
 * scheduling: nothing to do with the network, other processes or the rules). The same list is in
 * deploy/kubernetes/base/require-injection-policy.yaml (`allowedAdds`); test/k8s/deploy.test.ts
 * checks they are equal.
 */
export const ALLOWED_ADDS: readonly string[] = [
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'IPC_LOCK',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETPCAP',
  'SYS_CHROOT',
  'SYS_NICE',
];

/** Allowed as well when the gateway's process is not visible (no shared process namespace, no hostPID). */
export const ALLOWED_UNSHARED_ADDS: readonly string[] = ['SYS_PTRACE'];

/** Why some refused capabilities lead around capture, for the messages; the rest are simply not allowed. */
const WHY: Readonly<Record<string, string>> = {
  ALL: 'every capability',
  NET_ADMIN: 'it could rewrite or remove the capture rules',
  NET_RAW: 'packet sockets send around the capture rules',
  SETUID: 'it could switch to the gateway UID, which capture exempts',
  SETGID: 'it could switch to the gateway GID',
  SYS_ADMIN: 'namespaces, mounts and BPF leave no guarantee',
  SYS_MODULE: 'a kernel module can do anything, the rules included',
  BPF: 'BPF programs can redirect or rewrite traffic around the rules',
  PERFMON: 'with BPF it loads tracing programs that read other processes',
  DAC_READ_SEARCH: "it can open files by handle outside its own filesystem, the gateway's keys included",
  SYS_RAWIO: 'raw I/O to devices and memory',
  SYS_PTRACE: 'the pod shares its process namespace, so it could trace the gateway',
};

/**
 * What injection drops from app containers that say nothing about capabilities: the three the
 * container runtimes grant by default (containerd and Docker; CRI-O's default lacks NET_RAW) that
 * lead around capture. NET_ADMIN and SYS_ADMIN are never granted by default.
 */
export const CAPTURE_DROPS: readonly string[] = ['NET_RAW', 'SETGID', 'SETUID'];

/**
 * Host paths an app container of a captured pod may not mount: each of them, anything inside, and
 * anything that contains one (`/`, `/var`): the container runtime's sockets (under /run and
 * /var/run, or its state under /var/lib) start containers outside the pod; /proc and /sys reach
 * other namespaces and the kernel; /dev reaches devices. Also in the policy (`forbiddenHostPaths`).
 */
export const FORBIDDEN_HOST_PATHS: readonly string[] = ['/proc', '/sys', '/dev', '/run', '/var/run', '/var/lib/docker', '/var/lib/containerd', '/var/lib/crio', '/var/lib/kubelet'];

/** A path spelled so that prefix checks cannot be trusted (relative, `.` or `..` segments, `//`): refused as well. */
const ODD_PATH = /(^|\/)\.\.?(\/|$)|\/\/|^[^/]|^$/;

/** Why a hostPath is one an app container may not mount, or undefined when it may. */
export function forbiddenHostPath(path: string): string | undefined {
  if (ODD_PATH.test(path)) return 'a path that is not plainly absolute';
  const dir = path.endsWith('/') ? path : `${path}/`;
  const hit = FORBIDDEN_HOST_PATHS.find((f) => `${f}/`.startsWith(dir) || path.startsWith(`${f}/`));
  if (hit === undefined) return undefined;
  if (dir === `${hit}/`) return hit;
  return path.startsWith(`${hit}/`) ? `inside ${hit}` : `it holds ${hit}`;
}

/**
 * `cap_net_raw`, `CAP_NET_RAW` and `NET_RAW` are one capability to the runtimes. ASCII letters only
 * are upper-cased (as CEL's upperAscii does), so the policy and this reading agree on every name.
 */
const capabilityName = (v: unknown): string => (typeof v === 'string' ? v.replace(/[a-z]/g, (c) => c.toUpperCase()).replace(/^CAP_/, '') : '');

function securityContextOf(c: JsonObject): JsonObject {
  return isObject(c.securityContext) ? c.securityContext : {};
}

function capabilitiesOf(c: JsonObject): { add: string[]; drop: string[]; explicit: boolean } {
  const caps = securityContextOf(c).capabilities;
  if (!isObject(caps) || Object.keys(caps).length === 0) return { add: [], drop: [], explicit: false };
  const names = (v: unknown) => (Array.isArray(v) ? v.map(capabilityName) : []);
  return { add: names(caps.add), drop: names(caps.drop), explicit: true };
}

/**
 * False only when the container can hold no capability at all: it runs as a non-root user (by its
 * own or the pod's runAsUser, or runAsNonRoot) and cannot gain privileges (allowPrivilegeEscalation: false,
 * so no setuid program or file capability helps). An unset UID is the image's USER: unknown, maybe root.
 */
export function mayGainCapabilities(c: JsonObject, spec: JsonObject): boolean {
  const own = securityContextOf(c);
  const pod = isObject(spec.securityContext) ? spec.securityContext : {};
  const uid = own.runAsUser ?? pod.runAsUser;
  const nonRootFlag = own.runAsNonRoot ?? pod.runAsNonRoot;
  const nonRoot = (typeof uid === 'number' && uid > 0) || (uid === undefined && nonRootFlag === true);
  return !(nonRoot && own.allowPrivilegeEscalation === false);
}

export interface ExposureReason {
  /** What the container has, in a few words (for notes): `privileged`, `adds NET_ADMIN`. */
  readonly what: string;
  /** Why that is a way around capture (for refusals). */
  readonly why: string;
}

export interface CaptureExposure {
  /** How the container could step around capture, as it is (empty: it cannot). */
  readonly reasons: readonly ExposureReason[];
  /** The only exposure is the runtime's default capabilities, and the container says nothing about capabilities: injection drops them. */
  readonly fixableByDrop: boolean;
}

/** How one app container could step around transparent capture. */
export function captureExposure(c: JsonObject, spec: JsonObject): CaptureExposure {
  const reasons: ExposureReason[] = [];
  if (securityContextOf(c).privileged === true) reasons.push({ what: 'privileged', why: 'it could rewrite or remove the capture rules' });
  const caps = capabilitiesOf(c);
  const sharedPids = spec.shareProcessNamespace === true || spec.hostPID === true;
  const allowed = new Set([...ALLOWED_ADDS, ...(sharedPids ? [] : ALLOWED_UNSHARED_ADDS)]);
  for (const name of new Set(caps.add)) {
    if (allowed.has(name)) continue;
    reasons.push({ what: `adds ${name || '(a capability that is not a string)'}`, why: Object.hasOwn(WHY, name) ? WHY[name] : 'it is not among the capabilities an app container of a captured pod may add' });
  }
  const volumes = new Map(objectsOf(spec.volumes).map((v) => [v.name, v]));
  for (const m of objectsOf(c.volumeMounts)) {
    const v = volumes.get(m.name);
    const host = v && isObject(v.hostPath) ? v.hostPath.path : undefined;
    if (host === undefined) continue;
    const hit = typeof host === 'string' ? forbiddenHostPath(host) : 'a path that is not a string';
    if (hit !== undefined) reasons.push({ what: `mounts the host path ${JSON.stringify(host)} (${hit})`, why: "the node's runtime sockets, /proc, /sys and /dev reach outside the pod and its rules" });
  }
  const dropsDefaults = caps.drop.includes('ALL') || CAPTURE_DROPS.every((n) => caps.drop.includes(n));
  const keepsDefaults = mayGainCapabilities(c, spec) && !dropsDefaults;
  if (keepsDefaults && caps.explicit) {
    reasons.push({
      what: `keeps the default ${CAPTURE_DROPS.join(', ')}`,
      why: 'it may run as root, or become root through a setuid program, and the runtime grants them by default: with SETUID it could become the gateway UID that capture exempts',
    });
  }
  return { reasons, fixableByDrop: reasons.length === 0 && keepsDefaults };
}

/** The securityContext injection gives a container that said nothing about capabilities. */
export function dropCaptureCapabilities(c: JsonObject): void {
  const sc = isObject(c.securityContext) ? c.securityContext : {};
  sc.capabilities = { drop: [...CAPTURE_DROPS] };
  c.securityContext = sc;
}

/**
 * Takes out what dropCaptureCapabilities added — only when the container's capabilities are still
 * exactly a drop list of those names, so a forged status cannot remove capabilities the pod set itself.
 */
export function undoCaptureCapabilities(c: JsonObject): void {
  const sc = c.securityContext;
  if (!isObject(sc) || !isObject(sc.capabilities)) return;
  const caps = sc.capabilities;
  const keys = Object.keys(caps);
  const ours = keys.length === 1 && keys[0] === 'drop' && Array.isArray(caps.drop) && caps.drop.every((n) => typeof n === 'string' && CAPTURE_DROPS.includes(n));
  if (!ours) return;
  delete sc.capabilities;
  if (Object.keys(sc).length === 0) delete c.securityContext;
}

/**
 * What the pod as a whole shares with the node that leads around capture: the node's network (the
 * rules would be the node's, so the pod is not injected at all), its process or IPC namespace.
 */
export function hostNamespaceProblems(spec: JsonObject): string[] {
  const problems: string[] = [];
  if (spec.hostPID === true) problems.push("hostPID: the pod's containers see (and with a capability, enter) the node's processes, outside the capture rules");
  if (spec.hostIPC === true) problems.push("hostIPC: the pod shares the node's IPC namespace, a channel to processes outside the capture rules");
  return problems;
}
