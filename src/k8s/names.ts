// The fixed names injection uses: annotation keys, container and volume names, paths inside the
// pod, the gateway's UID and ports. One place, so the injector, the admission policy in deploy/ and
// the docs can be checked against each other.

/** The gateway's UID/GID (image contract); capture rules exempt it, so no app container may use it. */
export const GATEWAY_UID = 10001;

/** Namespace label and pod label: `enabled` opts in, `disabled` (pod label) opts out. */
export const INJECT_LABEL = 'dpg.io/inject';
export const ANNOTATION_PREFIX = 'dpg.io/';
/** Written by the injector: what it added, with the version and a hash of the settings. */
export const STATUS_ANNOTATION = 'dpg.io/status';
/** Written by the injector: what it chose not to do (a variable the pod already sets, …). */
export const NOTES_ANNOTATION = 'dpg.io/notes';

export const CONTAINER = {
  /** Root with NET_ADMIN/NET_RAW only: installs the capture rules, then exits. */
  capture: 'dpg-init',
  /** UID 10001, no capabilities: creates the pod's CA and writes the public trust files. */
  trust: 'dpg-trust',
  /** The gateway itself: a native sidecar (or the first container in legacy mode). */
  proxy: 'dpg-proxy',
} as const;

export const VOLUME = {
  config: 'dpg-config',
  manifests: 'dpg-manifests',
  /** The keyring Secret (dpg.io/keyring) as a file volume; mounted by dpg-proxy only. */
  keyring: 'dpg-keyring',
  /** DPG_DATA_DIR: the CA key lives here; mounted by dpg-trust and dpg-proxy only. */
  data: 'dpg-data',
  /** Public trust files (ca.crt, bundle.pem, truststore.p12); mounted read-only by app containers. */
  trust: 'dpg-trust',
  /** A CA from a Secret (dpg.io/ca-secret), placed into DPG_DATA_DIR. */
  ca: 'dpg-ca',
  /** A writable /tmp for dpg-init (iptables lock file) under a read-only root filesystem. */
  captureTmp: 'dpg-init-tmp',
} as const;

export const PATH = {
  /**
   * The config ConfigMap is mounted as a directory (no subPath: the kubelet updates it in place by
   * its `..data` symlink swap, and the gateway reloads); the config file is in it.
   */
  configDir: '/etc/dpg/config',
  /** What the config's relative paths resolve against (DPG_CONFIG_BASE): the layout before the config moved. */
  configBase: '/etc/dpg',
  config: '/etc/dpg/config/gateway.yaml',
  manifests: '/etc/dpg/manifests',
  /** The keyring Secret as a directory volume, followed like the config (DPG_KEYRING_FILE). */
  keyringDir: '/etc/dpg/keys',
  keyring: '/etc/dpg/keys/keyring.yaml',
  data: '/var/lib/dpg',
  trust: '/var/run/dpg/trust',
  captureTmp: '/tmp',
} as const;

/** The files `dpg ca bundle --out DIR` writes (contract with issue 10). */
export const TRUST_FILE = {
  ca: `${PATH.trust}/ca.crt`,
  bundle: `${PATH.trust}/bundle.pem`,
  truststore: `${PATH.trust}/truststore.p12`,
} as const;

/** The generated CA's file names in DPG_DATA_DIR (src/crypto/gateway-ca.ts); a CA Secret is mounted onto them. */
export const DATA_DIR_CA_FILES = { cert: 'proxy-ca.pem', key: 'proxy-ca-key.pem' } as const;

export const TRANSPARENT_ADDR = '127.0.0.1:15006';
export const REDIRECT_PORT = 15006;
export const FORWARD_PROXY_ADDR = '127.0.0.1:15001';
/** The admin listener (/metrics, /healthz, /readyz), like Istio's 15020; on every interface in a pod so Prometheus can scrape the pod IP. */
export const ADMIN_PORT = 15020;
export const ADMIN_ADDR = `0.0.0.0:${ADMIN_PORT}`;
export const ADMIN_PORT_NAME = 'dpg-admin';

/** The gateway's ports in a pod: its transparent listener (capture's redirect), forward proxy and admin listener. */
export interface GatewayPorts {
  readonly redirect: number;
  readonly forward: number;
  readonly admin: number;
}
export const DEFAULT_PORTS: GatewayPorts = { redirect: REDIRECT_PORT, forward: 15001, admin: ADMIN_PORT };
/**
 * In a pod with a service mesh (src/k8s/mesh.ts): Envoy binds 15001, 15006, 15020, 15021 and 15090
 * on every address, Linkerd 4140, 4143, 4190 and 4191; the gateway takes these instead.
 */
export const MESH_PORTS: GatewayPorts = { redirect: 15106, forward: 15101, admin: 15120 };

/** Pod annotations injection adds when the pod sets none of its own (the status lists those added). */
export const DEFAULT_CONTAINER_ANNOTATION = 'kubectl.kubernetes.io/default-container';
export const PROMETHEUS_PREFIX = 'prometheus.io/';
export const SCRAPE_ANNOTATIONS: Readonly<Record<string, string>> = {
  'prometheus.io/scrape': 'true',
  'prometheus.io/port': String(ADMIN_PORT),
  'prometheus.io/path': '/metrics',
};
/** The only annotation keys taking an injection out may remove (besides status and notes). */
export const INJECTED_ANNOTATIONS: readonly string[] = [DEFAULT_CONTAINER_ANNOTATION, ...Object.keys(SCRAPE_ANNOTATIONS)];

/** Every name injection adds, so a pod that already uses one is refused rather than merged. */
export const RESERVED_CONTAINER_NAMES: readonly string[] = Object.values(CONTAINER);
export const RESERVED_VOLUME_NAMES: readonly string[] = Object.values(VOLUME);
