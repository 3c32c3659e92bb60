// What one pod's injection looks like, read from its `dpg.io/*` annotations over the injector's
// defaults. Every value is checked here, strictly: an annotation the injector does not know, or a
// value it cannot read, is a problem that refuses the pod (a typo must not silently drop protection
// or an exclusion), and only canonical values reach the containers' arguments.

import { isIP } from 'node:net';
import { ANNOTATION_PREFIX, NOTES_ANNOTATION, STATUS_ANNOTATION } from './names.ts';

export type CaptureMode = 'transparent' | 'env-proxy';

export interface ProxyResources {
  readonly requests: { readonly cpu?: string; readonly memory?: string };
  readonly limits: { readonly cpu?: string; readonly memory?: string };
}

/** Everything that decides what injection adds to one pod. */
export interface InjectionSettings {
  /** ConfigMap holding `gateway.yaml`. */
  readonly configMap: string;
  /** ConfigMap holding the manifests (one key per `*.yaml`). */
  readonly manifestsMap: string;
  /** Secret with the keyring document under `keyring.yaml`, given to the gateway as DPG_KEYRING. */
  readonly keyringSecret?: string;
  /** `kubernetes.io/tls` Secret with the gateway CA (tls.crt, tls.key); absent: a CA per pod. */
  readonly caSecret?: string;
  readonly captureMode: CaptureMode;
  readonly captureBackend?: 'nft' | 'legacy';
  /** `all`: the transparent listener intercepts every TLS connection on captured ports (DPG_TRANSPARENT_INSPECT); absent: the gateway config's choice. */
  readonly transparentInspect?: 'routed' | 'all';
  /** Canonical `*` or a sorted port list; absent: what `dpg capture` defaults to (every port when a route names none, else the ports routes name, else 80,443). */
  readonly includePorts?: string;
  readonly excludePorts?: string;
  readonly excludeCidrs: readonly string[];
  /** false: the legacy layout for clusters before 1.29 (a regular container and a postStart wait). */
  readonly nativeSidecar: boolean;
  /** `*` or the names of the containers that get the CA trust (and, in env-proxy mode, the proxy variables). */
  readonly caContainers: '*' | readonly string[];
  /** App containers allowed to keep what could step around capture (per pod only: never a default). */
  readonly captureBypass: readonly string[];
  readonly resources: ProxyResources;
}

export interface SettingsProblem {
  /** The annotation (or default) the problem is about. */
  readonly key: string;
  readonly message: string;
}

interface AnnotationSpec {
  readonly key: string;
  /** The accepted values, as the docs table shows them. */
  readonly values: string;
  readonly description: string;
  /** A per-pod decision the injector's `--default` cannot make for every pod. */
  readonly podOnly?: true;
  apply(value: string, into: MutableSettings): string | undefined;
}

type MutableSettings = { -readonly [K in keyof InjectionSettings]: InjectionSettings[K] } & {
  resources: { requests: { cpu?: string; memory?: string }; limits: { cpu?: string; memory?: string } };
};

// DNS-1123 subdomain: what Kubernetes accepts as a ConfigMap or Secret name.
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
// DNS-1123 label: a container name.
const CONTAINER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
// A Kubernetes resource quantity (no sign: a negative request makes no sense here).
const QUANTITY = /^(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$/;

function objectName(what: string) {
  return (value: string, into: MutableSettings, set: (name: string) => void): string | undefined => {
    if (!OBJECT_NAME.test(value)) return `must be a ${what} name (lower-case letters, digits, '-' and '.')`;
    set(value);
    return undefined;
  };
}

/** `80,443` → sorted, deduplicated `80,443`; every entry a port 1-65535. */
export function canonicalPorts(value: string, allowStar: boolean): string | { error: string } {
  const text = value.trim();
  if (allowStar && text === '*') return '*';
  const parts = text.split(',').map((p) => p.trim());
  const ports = new Set<number>();
  for (const p of parts) {
    if (!/^\d{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65535) {
      return { error: `must be a comma-separated list of ports 1-65535${allowStar ? " or '*'" : ''}` };
    }
    ports.add(Number(p));
  }
  return [...ports].sort((a, b) => a - b).join(',');
}

/** `10.0.0.0/8, fd00::/8` → canonical CIDRs (an address alone becomes /32 or /128). */
export function canonicalCidrs(value: string): string[] | { error: string } {
  const out = new Set<string>();
  for (const raw of value.split(',').map((p) => p.trim())) {
    if (raw === '') continue;
    const [address, prefix, extra] = raw.split('/');
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || extra !== undefined || (prefix !== undefined && !/^\d{1,3}$/.test(prefix)) || Number(prefix ?? max) > max) {
      return { error: 'must be a comma-separated list of IPv4/IPv6 addresses or CIDRs (10.0.0.0/8, fd00::/8)' };
    }
    out.add(`${address.toLowerCase()}/${Number(prefix ?? max)}`);
  }
  return [...out];
}

function quantity(target: 'requests' | 'limits', resource: 'cpu' | 'memory'): AnnotationSpec['apply'] {
  return (value, into) => {
    if (!QUANTITY.test(value.trim())) return 'must be a Kubernetes quantity (e.g. 100m, 0.5, 128Mi)';
    into.resources[target][resource] = value.trim();
    return undefined;
  };
}

function bool(value: string): boolean | undefined {
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}

/** Every annotation the injector reads, in the order the docs table lists them. */
export const ANNOTATIONS: readonly AnnotationSpec[] = [
  {
    key: 'dpg.io/config',
    values: 'ConfigMap name',
    description: 'ConfigMap with the gateway config under the key `gateway.yaml`',
    apply: (v, into) => objectName('ConfigMap')(v, into, (n) => (into.configMap = n)),
  },
  {
    key: 'dpg.io/manifests',
    values: 'ConfigMap name',
    description: 'ConfigMap with the manifests, one key per `*.yaml` file',
    apply: (v, into) => objectName('ConfigMap')(v, into, (n) => (into.manifestsMap = n)),
  },
  {
    key: 'dpg.io/keyring',
    values: 'Secret name',
    description: 'Secret with the keyring under the key `keyring.yaml`, given to the gateway as `DPG_KEYRING` (config: `keys: {source: env}`)',
    apply: (v, into) => objectName('Secret')(v, into, (n) => (into.keyringSecret = n)),
  },
  {
    key: 'dpg.io/ca-secret',
    values: 'Secret name',
    description: 'a `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`) holding the gateway CA; without it each pod makes its own CA',
    apply: (v, into) => objectName('Secret')(v, into, (n) => (into.caSecret = n)),
  },
  {
    key: 'dpg.io/capture-mode',
    values: '`transparent` \\| `env-proxy`',
    description: '`transparent`: iptables capture by `dpg-init` (needs NET_ADMIN); `env-proxy`: only `HTTP(S)_PROXY`/`NO_PROXY` in app containers, no capabilities (Pod Security `restricted`)',
    apply: (v, into) => {
      if (v !== 'transparent' && v !== 'env-proxy') return "must be 'transparent' or 'env-proxy'";
      into.captureMode = v;
      return undefined;
    },
  },
  {
    key: 'dpg.io/capture-backend',
    values: '`nft` \\| `legacy`',
    description: "iptables backend of `dpg capture`; `legacy` for nodes whose kernel lacks nf_tables",
    apply: (v, into) => {
      if (v !== 'nft' && v !== 'legacy') return "must be 'nft' or 'legacy'";
      into.captureBackend = v;
      return undefined;
    },
  },
  {
    key: 'dpg.io/transparent-inspect',
    values: '`routed` \\| `all`',
    description:
      "`all`: the transparent listener intercepts every TLS connection on captured ports, so each request's Host decides (domain fronting, TLS without a routed name); `routed` (the gateway's default): only connections a route can concern. Transparent mode only; given to `dpg-proxy` as `DPG_TRANSPARENT_INSPECT`",
    apply: (v, into) => {
      if (v !== 'routed' && v !== 'all') return "must be 'routed' or 'all'";
      into.transparentInspect = v;
      return undefined;
    },
  },
  {
    key: 'dpg.io/allow-capture-bypass',
    values: 'container names',
    description:
      "app containers allowed to keep what could step around capture (privileged, NET_ADMIN, NET_RAW, SETUID, SETGID, SYS_ADMIN, the runtime's defaults as root); without it such a container is refused, or loses the defaults; recorded in `dpg.io/notes`",
    podOnly: true,
    apply: (v, into) => {
      const names = v.split(',').map((n) => n.trim()).filter((n) => n !== '');
      if (names.length === 0 || names.some((n) => !CONTAINER_NAME.test(n))) return 'must be a comma-separated list of container names (each named: there is no wildcard)';
      into.captureBypass = [...new Set(names)].sort();
      return undefined;
    },
  },
  {
    key: 'dpg.io/include-outbound-ports',
    values: 'ports, or `*`',
    description: 'outbound ports captured (`dpg capture --include-ports`); in `env-proxy` mode not applicable',
    apply: (v, into) => {
      const ports = canonicalPorts(v, true);
      if (typeof ports !== 'string') return ports.error;
      into.includePorts = ports;
      return undefined;
    },
  },
  {
    key: 'dpg.io/exclude-outbound-ports',
    values: 'ports',
    description: 'outbound ports never captured (e.g. a database); in `env-proxy` mode not applicable',
    apply: (v, into) => {
      const ports = canonicalPorts(v, false);
      if (typeof ports !== 'string') return ports.error;
      into.excludePorts = ports;
      return undefined;
    },
  },
  {
    key: 'dpg.io/exclude-outbound-cidrs',
    values: 'CIDRs',
    description: 'destinations never captured; in `env-proxy` mode they are added to `NO_PROXY`',
    apply: (v, into) => {
      const cidrs = canonicalCidrs(v);
      if (!Array.isArray(cidrs)) return cidrs.error;
      into.excludeCidrs = cidrs;
      return undefined;
    },
  },
  {
    key: 'dpg.io/native-sidecar',
    values: '`true` \\| `false`',
    description: '`false`: legacy layout for clusters before 1.29 (regular container first, `postStart` wait); refused for run-to-completion pods',
    apply: (v, into) => {
      const b = bool(v);
      if (b === undefined) return "must be 'true' or 'false'";
      into.nativeSidecar = b;
      return undefined;
    },
  },
  {
    key: 'dpg.io/ca-containers',
    values: '`*`, container names, or empty',
    description: 'containers (and init containers) that get the CA trust files and variables; empty: none',
    apply: (v, into) => {
      if (v.trim() === '*') {
        into.caContainers = '*';
        return undefined;
      }
      const names = v.split(',').map((n) => n.trim()).filter((n) => n !== '');
      const bad = names.find((n) => !CONTAINER_NAME.test(n));
      if (bad !== undefined) return "must be '*' or a comma-separated list of container names";
      into.caContainers = [...new Set(names)];
      return undefined;
    },
  },
  { key: 'dpg.io/proxy-cpu-request', values: 'quantity', description: 'CPU request of `dpg-proxy`', apply: quantity('requests', 'cpu') },
  { key: 'dpg.io/proxy-memory-request', values: 'quantity', description: 'memory request of `dpg-proxy`', apply: quantity('requests', 'memory') },
  { key: 'dpg.io/proxy-cpu-limit', values: 'quantity', description: 'CPU limit of `dpg-proxy`', apply: quantity('limits', 'cpu') },
  { key: 'dpg.io/proxy-memory-limit', values: 'quantity', description: 'memory limit of `dpg-proxy`', apply: quantity('limits', 'memory') },
];

const BY_KEY = new Map(ANNOTATIONS.map((a) => [a.key, a]));
/** Annotations the injector writes itself; never read as settings. */
const WRITTEN = new Set([STATUS_ANNOTATION, NOTES_ANNOTATION]);

export const BUILT_IN_DEFAULTS: InjectionSettings = {
  configMap: 'dpg-config',
  manifestsMap: 'dpg-manifests',
  captureMode: 'transparent',
  excludeCidrs: [],
  nativeSidecar: true,
  caContainers: '*',
  captureBypass: [],
  resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
};

function copy(s: InjectionSettings): MutableSettings {
  return {
    ...s,
    excludeCidrs: [...s.excludeCidrs],
    caContainers: s.caContainers === '*' ? '*' : [...s.caContainers],
    captureBypass: [...s.captureBypass],
    resources: { requests: { ...s.resources.requests }, limits: { ...s.resources.limits } },
  };
}

/**
 * Applies `dpg.io/*` annotations over a base. Annotations outside `dpg.io/` are ignored; an unknown
 * `dpg.io/` key is a problem (with the closest known key when one is near).
 */
export function applyAnnotations(
  base: InjectionSettings,
  annotations: Readonly<Record<string, unknown>>,
): { settings: InjectionSettings; problems: SettingsProblem[] } {
  const into = copy(base);
  const problems: SettingsProblem[] = [];
  for (const key of Object.keys(annotations).sort()) {
    if (!key.startsWith(ANNOTATION_PREFIX) || WRITTEN.has(key)) continue;
    const spec = BY_KEY.get(key);
    if (!spec) {
      const near = closest(key);
      problems.push({ key, message: `unknown annotation${near ? ` (did you mean ${near}?)` : ''}` });
      continue;
    }
    const value = annotations[key];
    if (typeof value !== 'string') {
      problems.push({ key, message: 'must be a string' });
      continue;
    }
    const message = spec.apply(value, into);
    if (message) problems.push({ key, message });
  }
  return { settings: into, problems };
}

/** The known key within edit distance 3 of a misspelt one, if any. */
function closest(key: string): string | undefined {
  let best: string | undefined;
  let bestDistance = 4;
  for (const known of BY_KEY.keys()) {
    const d = editDistance(key, known);
    if (d < bestDistance) {
      best = known;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}
