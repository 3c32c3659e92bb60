// The containers and volumes injection adds, built from one pod's settings. Typed with the
// Kubernetes API's own interfaces (kubernetes-models), so a misspelt field fails the type check.

import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import type { ISecurityContext } from 'kubernetes-models/v1/SecurityContext';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import type { IVolumeMount } from 'kubernetes-models/v1/VolumeMount';
import {
  ADMIN_ADDR,
  ADMIN_PORT,
  ADMIN_PORT_NAME,
  CONTAINER,
  DATA_DIR_CA_FILES,
  FORWARD_PROXY_ADDR,
  GATEWAY_UID,
  PATH,
  REDIRECT_PORT,
  TRANSPARENT_ADDR,
  TRUST_FILE,
  VOLUME,
} from './names.ts';
import type { InjectionSettings } from './settings.ts';
import { DEFAULT_PORTS, type GatewayPorts } from './names.ts';
import type { Mesh } from './mesh.ts';

export interface ImageOptions {
  readonly image: string;
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
}

export interface InjectedParts {
  /** Prepended to spec.initContainers, in this order. */
  readonly initContainers: IContainer[];
  /** Prepended to spec.containers (legacy layout only). */
  readonly containers: IContainer[];
  readonly volumes: IVolume[];
}

const configArgs = ['--config', PATH.config];

/** Nothing but what the container needs: no privilege escalation, a read-only root, RuntimeDefault seccomp. */
function lockedDown(user: number, capabilities: string[]): ISecurityContext {
  return {
    runAsUser: user,
    runAsGroup: user,
    runAsNonRoot: user !== 0,
    allowPrivilegeEscalation: false,
    privileged: false,
    readOnlyRootFilesystem: true,
    capabilities: capabilities.length > 0 ? { drop: ['ALL'], add: capabilities } : { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

// Directories, never subPath: the kubelet updates a ConfigMap or Secret volume by swapping its
// `..data` symlink, which a subPath mount never sees. The gateway watches the directories and
// reloads (docs/operations.md, "Reload and key rotation").
function configMounts(): IVolumeMount[] {
  return [
    { name: VOLUME.config, mountPath: PATH.configDir, readOnly: true },
    { name: VOLUME.manifests, mountPath: PATH.manifests, readOnly: true },
  ];
}

/**
 * For every dpg container: the config file moved into a directory of its own, and its relative
 * paths (`manifests: manifests`, files in the manifests volume) keep resolving against /etc/dpg.
 */
const configBaseEnv = (): IEnvVar => ({ name: 'DPG_CONFIG_BASE', value: PATH.configBase });

/** The data directory, with a CA from a Secret placed where the gateway looks for its generated one. */
function dataMounts(s: InjectionSettings): IVolumeMount[] {
  const mounts: IVolumeMount[] = [{ name: VOLUME.data, mountPath: PATH.data }];
  if (s.caSecret) {
    mounts.push(
      { name: VOLUME.ca, mountPath: `${PATH.data}/${DATA_DIR_CA_FILES.cert}`, subPath: 'tls.crt', readOnly: true },
      { name: VOLUME.ca, mountPath: `${PATH.data}/${DATA_DIR_CA_FILES.key}`, subPath: 'tls.key', readOnly: true },
    );
  }
  return mounts;
}

function captureArgs(s: InjectionSettings, ports: GatewayPorts, mesh: Mesh | undefined): string[] {
  const args = ['capture', '--proxy-uid', String(GATEWAY_UID), '--redirect-port', String(ports.redirect)];
  // The mesh proxy's connections carry what the gateway protected: captured again they would loop.
  if (mesh) args.push('--exclude-uids', String(mesh.proxyUid));
  if (s.includePorts) args.push('--include-ports', s.includePorts);
  if (s.excludePorts) args.push('--exclude-ports', s.excludePorts);
  if (s.excludeCidrs.length > 0) args.push('--exclude-cidrs', s.excludeCidrs.join(','));
  if (s.captureBackend) args.push('--backend', s.captureBackend);
  return [...args, ...configArgs];
}

function probe(kind: 'ready' | 'live') {
  return { exec: { command: ['dpg', 'probe', kind, ...configArgs] } };
}

function proxyEnv(s: InjectionSettings, ports: GatewayPorts): IEnvVar[] {
  const env: IEnvVar[] = [
    { name: 'NODE_ENV', value: 'production' },
    { name: 'DPG_DATA_DIR', value: PATH.data },
    // Metrics and health only, never payload data: on the pod IP so Prometheus can scrape it
    // (docs/kubernetes.md, "Metrics and the admin port").
    { name: 'DPG_ADMIN_ADDR', value: ports.admin === ADMIN_PORT ? ADMIN_ADDR : `0.0.0.0:${ports.admin}` },
  ];
  if (s.captureMode === 'transparent') {
    // The forward listener would be a way around capture (loopback is exempt): off, unless env-proxy asks for it.
    env.push({ name: 'DPG_TRANSPARENT_ADDR', value: ports.redirect === REDIRECT_PORT ? TRANSPARENT_ADDR : `127.0.0.1:${ports.redirect}` }, { name: 'DPG_PROXY_ADDR', value: 'off' });
    if (s.transparentInspect) env.push({ name: 'DPG_TRANSPARENT_INSPECT', value: s.transparentInspect });
  } else env.push({ name: 'DPG_PROXY_ADDR', value: forwardAddr(ports) });
  // A file volume, not a variable: a running container never sees a variable change, while the
  // kubelet updates the file and the gateway reloads it (key rotation without a restart).
  if (s.keyringSecret) env.push({ name: 'DPG_KEYRING_FILE', value: PATH.keyring });
  env.push(configBaseEnv());
  return env;
}

function resources(s: InjectionSettings) {
  const pick = (r: { cpu?: string; memory?: string }) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined));
  const out: { requests?: Record<string, string>; limits?: Record<string, string> } = {};
  const requests = pick(s.resources.requests);
  const limits = pick(s.resources.limits);
  if (Object.keys(requests).length > 0) out.requests = requests;
  if (Object.keys(limits).length > 0) out.limits = limits;
  return out;
}

/** Builds what injection adds to a pod with these settings. */
export function buildParts(s: InjectionSettings, image: ImageOptions, ports: GatewayPorts = DEFAULT_PORTS, mesh?: Mesh): InjectedParts {
  const pull = image.imagePullPolicy ? { imagePullPolicy: image.imagePullPolicy } : {};
  const initContainers: IContainer[] = [];
  const containers: IContainer[] = [];

  if (s.captureMode === 'transparent') {
    initContainers.push({
      name: CONTAINER.capture,
      image: image.image,
      ...pull,
      args: captureArgs(s, ports, mesh),
      // iptables-legacy takes a lock file; the root filesystem stays read-only.
      env: [{ name: 'XTABLES_LOCKFILE', value: `${PATH.captureTmp}/xtables.lock` }, configBaseEnv()],
      volumeMounts: [...configMounts(), { name: VOLUME.captureTmp, mountPath: PATH.captureTmp }],
      resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } },
      securityContext: lockedDown(0, ['NET_ADMIN', 'NET_RAW']),
    });
  }

  initContainers.push({
    name: CONTAINER.trust,
    image: image.image,
    ...pull,
    args: ['ca', 'bundle', '--out', PATH.trust, ...configArgs],
    env: [{ name: 'DPG_DATA_DIR', value: PATH.data }, configBaseEnv()],
    volumeMounts: [...configMounts(), ...dataMounts(s), { name: VOLUME.trust, mountPath: PATH.trust }],
    resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } },
    securityContext: lockedDown(GATEWAY_UID, []),
  });

  const proxy: IContainer = {
    name: CONTAINER.proxy,
    image: image.image,
    ...pull,
    args: ['serve', ...configArgs],
    env: proxyEnv(s, ports),
    ports: [{ name: ADMIN_PORT_NAME, containerPort: ports.admin, protocol: 'TCP' }],
    volumeMounts: [...configMounts(), ...dataMounts(s), ...(s.keyringSecret ? [{ name: VOLUME.keyring, mountPath: PATH.keyringDir, readOnly: true }] : [])],
    resources: resources(s),
    securityContext: lockedDown(GATEWAY_UID, []),
  };
  if (s.nativeSidecar) {
    initContainers.push({
      ...proxy,
      restartPolicy: 'Always',
      // The app and the user's init containers start only once this succeeds.
      startupProbe: { ...probe('ready'), periodSeconds: 1, timeoutSeconds: 5, failureThreshold: 120 },
      readinessProbe: { ...probe('ready'), periodSeconds: 15, timeoutSeconds: 5, failureThreshold: 2 },
      livenessProbe: { ...probe('live'), periodSeconds: 30, timeoutSeconds: 5, failureThreshold: 3 },
    });
  } else {
    // Before 1.29: the kubelet starts containers in order and waits for each postStart hook, so
    // the app's containers start only once the gateway answers.
    containers.push({
      ...proxy,
      lifecycle: { postStart: { exec: { command: ['dpg', 'probe', 'ready', '--wait', '120', ...configArgs] } } },
      readinessProbe: { ...probe('ready'), periodSeconds: 15, timeoutSeconds: 5, failureThreshold: 2 },
      livenessProbe: { ...probe('live'), initialDelaySeconds: 10, periodSeconds: 30, timeoutSeconds: 5, failureThreshold: 3 },
    });
  }

  const volumes: IVolume[] = [
    { name: VOLUME.config, configMap: { name: s.configMap, items: [{ key: 'gateway.yaml', path: 'gateway.yaml' }] } },
    { name: VOLUME.manifests, configMap: { name: s.manifestsMap } },
    // Memory-backed: the CA key never touches the node's disk.
    { name: VOLUME.data, emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
    { name: VOLUME.trust, emptyDir: { medium: 'Memory', sizeLimit: '4Mi' } },
  ];
  if (s.captureMode === 'transparent') volumes.push({ name: VOLUME.captureTmp, emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } });
  // 0444 on files only the dpg containers mount: Kubernetes makes Secret files root-owned, and the
  // gateway runs as 10001 without touching the pod's fsGroup.
  if (s.caSecret) volumes.push({ name: VOLUME.ca, secret: { secretName: s.caSecret, defaultMode: 0o444 } });
  // 0444 for the same reason; the keyring check accepts other-read only inside such a volume
  // (never writable), and only dpg-proxy mounts it.
  if (s.keyringSecret) {
    volumes.push({ name: VOLUME.keyring, secret: { secretName: s.keyringSecret, items: [{ key: 'keyring.yaml', path: 'keyring.yaml' }], defaultMode: 0o444 } });
  }
  return { initContainers, containers, volumes };
}

/** Variables every CA-trusting container gets, unless it sets them itself. */
export function trustEnv(): IEnvVar[] {
  return [
    { name: 'NODE_EXTRA_CA_CERTS', value: TRUST_FILE.ca },
    { name: 'SSL_CERT_FILE', value: TRUST_FILE.bundle },
    { name: 'REQUESTS_CA_BUNDLE', value: TRUST_FILE.bundle },
    { name: 'CURL_CA_BUNDLE', value: TRUST_FILE.bundle },
    {
      name: 'JAVA_TOOL_OPTIONS',
      value: `-Djavax.net.ssl.trustStore=${TRUST_FILE.truststore} -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit`,
    },
  ];
}

/** In env-proxy mode: the forward proxy for every HTTP(S) client that honours the variables. */
/** The forward proxy's address for these ports (the default one unchanged). */
export function forwardAddr(ports: GatewayPorts): string {
  return ports.forward === DEFAULT_PORTS.forward ? FORWARD_PROXY_ADDR : `127.0.0.1:${ports.forward}`;
}

export function proxyVariables(s: InjectionSettings, ports: GatewayPorts = DEFAULT_PORTS): IEnvVar[] {
  const proxy = `http://${forwardAddr(ports)}`;
  const noProxy = ['localhost', '127.0.0.1', '::1', ...s.excludeCidrs].join(',');
  return [
    { name: 'HTTP_PROXY', value: proxy },
    { name: 'HTTPS_PROXY', value: proxy },
    { name: 'http_proxy', value: proxy },
    { name: 'https_proxy', value: proxy },
    { name: 'NO_PROXY', value: noProxy },
    { name: 'no_proxy', value: noProxy },
  ];
}

export const TRUST_MOUNT: IVolumeMount = { name: VOLUME.trust, mountPath: PATH.trust, readOnly: true };
