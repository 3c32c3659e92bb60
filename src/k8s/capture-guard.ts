// Which app containers could step around transparent capture, and what injection does about it.
// Capture exempts the gateway's UID and lives in the pod's own netfilter rules, so a container that
// can change its UID (CAP_SETUID/SETGID as root, or through a setuid program), rewrite the rules
// (NET_ADMIN, privileged) or send packets past them (NET_RAW: packet sockets skip netfilter) could
// leave unprotected. The same rule is written in CEL in deploy/kubernetes/base/require-injection-policy.yaml;
// test/k8s/deploy.test.ts evaluates both on the same pods.

type JsonObject = { [key: string]: unknown };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Capabilities an app container may not ask for: each is a way around the capture rules. */
const FORBIDDEN_ADDS: Readonly<Record<string, string>> = {
  ALL: 'every capability',
  NET_ADMIN: 'it could rewrite or remove the capture rules',
  NET_RAW: 'packet sockets send around the capture rules',
  SETUID: 'it could switch to the gateway UID, which capture exempts',
  SETGID: 'it could switch to the gateway GID',
  SYS_ADMIN: 'namespaces, mounts and BPF leave no guarantee',
};

/** With a shared process namespace (or hostPID) the gateway's process is visible: tracing it is a way around. */
const SHARED_PID_FORBIDDEN_ADDS: Readonly<Record<string, string>> = {
  SYS_PTRACE: 'the pod shares its process namespace, so it could trace the gateway',
};

/**
 * What injection drops from app containers that say nothing about capabilities: the three the
 * container runtimes grant by default (containerd and Docker; CRI-O's default lacks NET_RAW) that
 * lead around capture. NET_ADMIN and SYS_ADMIN are never granted by default.
 */
export const CAPTURE_DROPS: readonly string[] = ['NET_RAW', 'SETGID', 'SETUID'];

/** `cap_net_raw`, `CAP_NET_RAW` and `NET_RAW` are one capability to the runtimes. */
const capabilityName = (v: unknown): string => (typeof v === 'string' ? v.toUpperCase().replace(/^CAP_/, '') : '');

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
  const forbidden: Record<string, string> = { ...FORBIDDEN_ADDS, ...(sharedPids ? SHARED_PID_FORBIDDEN_ADDS : {}) };
  for (const name of new Set(caps.add)) {
    if (Object.hasOwn(forbidden, name)) reasons.push({ what: `adds ${name}`, why: forbidden[name] });
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
