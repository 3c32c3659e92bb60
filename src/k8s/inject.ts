// inject(): a pod template in, the same template with the gateway beside it out. Pure: no I/O, the
// input is never changed, and the same input and options always give the same output. Shared by
// `dpg inject` (every workload kind), the admission webhook and the validating check.
//
// The order is fixed: take out what an earlier injection added (from the status annotation), read
// the settings, refuse what cannot be protected (in transparent mode, app containers that could
// step around capture: capture-guard.ts), drop the runtime's default capabilities that lead around
// it from app containers that set none, then add the containers, volumes, trust and status.
// Starting from the un-injected pod is what makes it idempotent and safe under reinvocation.

import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import {
  CONTAINER,
  DEFAULT_CONTAINER_ANNOTATION,
  GATEWAY_UID,
  INJECTED_ANNOTATIONS,
  PROMETHEUS_PREFIX,
  SCRAPE_ANNOTATIONS,
  INJECT_LABEL,
  NOTES_ANNOTATION,
  PATH,
  RESERVED_CONTAINER_NAMES,
  RESERVED_VOLUME_NAMES,
  STATUS_ANNOTATION,
  VOLUME,
  DEFAULT_PORTS,
  MESH_PORTS,
  type GatewayPorts,
} from './names.ts';
import { CAPTURE_DROPS, captureExposure, dropCaptureCapabilities, hostNamespaceProblems, undoCaptureCapabilities } from './capture-guard.ts';
import { applyAnnotations, type InjectionSettings } from './settings.ts';
import { gatewayLikeReason } from './other-gateway.ts';
import { detectMesh } from './mesh.ts';
import { configHash, decodeStatus, encodeStatus, type InjectionStatus } from './status.ts';
import { buildParts, proxyVariables, trustEnv, TRUST_MOUNT, type ImageOptions } from './template.ts';

export type JsonObject = { [key: string]: unknown };

export interface InjectorOptions extends ImageOptions {
  /** dpg version recorded in the status annotation. */
  readonly version: string;
  /** Settings for a pod without annotations (built-in defaults with the injector's --default flags). */
  readonly defaults: InjectionSettings;
}

export type InjectionResult =
  | {
      readonly outcome: 'injected';
      readonly template: JsonObject;
      readonly notes: readonly string[];
      readonly status: InjectionStatus;
      /** Risks of this pod's settings, for the operator (admission warnings, `dpg inject --check`); not written into the pod. */
      readonly warnings: readonly string[];
    }
  | { readonly outcome: 'skipped'; readonly template: JsonObject; readonly reason: string }
  | { readonly outcome: 'refused'; readonly template: JsonObject; readonly problems: readonly string[] };

/** Every variable injection may add: the only names taking an injection out may remove. */
const INJECTED_VARIABLES = new Set([
  ...trustEnv().map((e) => e.name),
  ...proxyVariables({ excludeCidrs: [] } as unknown as InjectionSettings).map((e) => e.name),
]);

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const objectsOf = (v: unknown): JsonObject[] => (Array.isArray(v) ? v.filter(isObject) : []);

function child(parent: JsonObject, key: string): JsonObject {
  const existing = parent[key];
  if (isObject(existing)) return existing;
  const created: JsonObject = {};
  parent[key] = created;
  return created;
}

/** Sets a list, or removes the key when the list is empty (so taking out restores "absent"). */
function setList(parent: JsonObject, key: string, list: unknown[]): void {
  if (list.length > 0) parent[key] = list;
  else delete parent[key];
}

function dropEmpty(parent: JsonObject, key: string): void {
  const v = parent[key];
  if (isObject(v) && Object.keys(v).length === 0) delete parent[key];
}

/**
 * Takes out exactly what the status annotation says an earlier injection added — and only names
 * injection owns, so a forged status cannot remove the pod's own containers or variables.
 */
export function uninject(input: JsonObject): JsonObject {
  const template = structuredClone(input);
  const metadata = isObject(template.metadata) ? template.metadata : undefined;
  const annotations = metadata && isObject(metadata.annotations) ? metadata.annotations : undefined;
  const status = decodeStatus(annotations?.[STATUS_ANNOTATION]);
  if (annotations) {
    delete annotations[STATUS_ANNOTATION];
    delete annotations[NOTES_ANNOTATION];
    for (const key of status?.annotations ?? []) if (INJECTED_ANNOTATIONS.includes(key)) delete annotations[key];
    if (metadata) dropEmpty(metadata, 'annotations');
  }
  dropEmpty(template, 'metadata');
  const spec = isObject(template.spec) ? template.spec : undefined;
  if (!status || !spec) return template;

  const ours = (names: readonly string[], reserved: readonly string[]) => new Set(names.filter((n) => reserved.includes(n)));
  const initNames = ours(status.initContainers, RESERVED_CONTAINER_NAMES);
  const containerNames = ours(status.containers, RESERVED_CONTAINER_NAMES);
  const volumeNames = ours(status.volumes, RESERVED_VOLUME_NAMES);

  if (Array.isArray(spec.initContainers)) setList(spec, 'initContainers', spec.initContainers.filter((c) => !(isObject(c) && initNames.has(c.name as string))));
  if (Array.isArray(spec.containers)) spec.containers = spec.containers.filter((c) => !(isObject(c) && containerNames.has(c.name as string)));
  if (Array.isArray(spec.volumes)) setList(spec, 'volumes', spec.volumes.filter((v) => !(isObject(v) && volumeNames.has(v.name as string))));

  const dropped = new Set(status.capabilityDrops ?? []);
  for (const c of [...objectsOf(spec.initContainers), ...objectsOf(spec.containers)]) {
    const name = c.name as string;
    if (dropped.has(name)) undoCaptureCapabilities(c);
    // Admission runs before validation: a container may be called `constructor`; own keys only.
    const listed = Object.hasOwn(status.env, name) ? status.env[name] : [];
    const added = new Set(listed.filter((n) => INJECTED_VARIABLES.has(n)));
    if (added.size > 0 && Array.isArray(c.env)) setList(c, 'env', c.env.filter((e) => !(isObject(e) && added.has(e.name as string))));
    if (status.trustMounts.includes(name) && Array.isArray(c.volumeMounts)) {
      setList(c, 'volumeMounts', c.volumeMounts.filter((m) => !(isObject(m) && m.name === VOLUME.trust)));
    }
  }
  return template;
}

function effectiveUid(container: JsonObject, spec: JsonObject): unknown {
  const own = isObject(container.securityContext) ? container.securityContext.runAsUser : undefined;
  if (own !== undefined) return own;
  return isObject(spec.securityContext) ? spec.securityContext.runAsUser : undefined;
}

/** Why a pod is left alone, or undefined when it is to be injected. */
function skipReason(template: JsonObject, spec: JsonObject): string | undefined {
  const labels = isObject(template.metadata) && isObject(template.metadata.labels) ? template.metadata.labels : {};
  if (labels[INJECT_LABEL] === 'disabled') return `opted out by the label ${INJECT_LABEL}=disabled`;
  if (isObject(spec.os) && spec.os.name === 'windows') return 'Windows pod: the gateway image is Linux-only';
  return undefined;
}

function refusals(spec: JsonObject, settings: InjectionSettings, image: string): string[] {
  const problems: string[] = [];
  // Not left alone any more (issue 16): a hostNetwork pod in a protected namespace would run
  // unprotected, and capture cannot be installed for it without changing the node's network.
  if (spec.hostNetwork === true) {
    problems.push(
      `hostNetwork pod: the gateway cannot capture its traffic without changing the node's network, so it would run unprotected; run it without hostNetwork, or opt it out with the label ${INJECT_LABEL}=disabled if it must not be protected`,
    );
  }
  if (settings.transparentInspect !== undefined && settings.captureMode !== 'transparent') {
    problems.push(`dpg.io/transparent-inspect: only applies in transparent capture mode (this pod's is ${settings.captureMode})`);
  }
  if (settings.captureMode === 'transparent') problems.push(...hostNamespaceProblems(spec).map((p) => `${p}; run the pod without it, or opt it out with the label ${INJECT_LABEL}=disabled`));
  const inits = objectsOf(spec.initContainers);
  const regular = objectsOf(spec.containers);
  const all = [...inits, ...regular];
  for (const c of all) {
    if (RESERVED_CONTAINER_NAMES.includes(c.name as string)) {
      problems.push(`container name ${JSON.stringify(c.name)} is reserved for the gateway (and no injection status names it)`);
    } else {
      const like = gatewayLikeReason(c, image);
      if (like !== undefined) {
        problems.push(
          `container ${JSON.stringify(c.name)} already looks like a gateway (${like}), outside this injector's status: the pod carries another dpg egress proxy or capture (injected under another name or by another injector). Injecting a second one would capture and protect twice; remove it (or its injection) first, or opt the pod out with the label ${INJECT_LABEL}=disabled`,
        );
      }
    }
    if (effectiveUid(c, spec) === GATEWAY_UID) {
      problems.push(`container ${JSON.stringify(c.name)} runs as UID ${GATEWAY_UID}, the gateway's UID: its traffic would bypass capture; run it as another UID`);
    }
  }
  for (const v of objectsOf(spec.volumes)) {
    if (RESERVED_VOLUME_NAMES.includes(v.name as string)) problems.push(`volume name ${JSON.stringify(v.name)} is reserved for the gateway`);
  }
  const names = new Set(all.map((c) => c.name));
  if (settings.caContainers !== '*') {
    for (const n of settings.caContainers) if (!names.has(n)) problems.push(`dpg.io/ca-containers: no container named ${JSON.stringify(n)} in this pod`);
  }
  for (const n of settings.captureBypass) if (!names.has(n)) problems.push(`dpg.io/allow-capture-bypass: no container named ${JSON.stringify(n)} in this pod`);
  if (settings.captureMode === 'transparent') {
    for (const c of all) {
      if (settings.captureBypass.includes(c.name as string)) continue;
      const { reasons } = captureExposure(c, spec);
      if (reasons.length === 0) continue;
      problems.push(
        `container ${JSON.stringify(c.name)} could step around transparent capture: ${reasons.map((r) => `${r.what} (${r.why})`).join('; ')}. Remove what it does not need (securityContext.capabilities.drop: [ALL], or at least ${CAPTURE_DROPS.join(', ')}; add only capabilities of the allow list in docs/kubernetes.md), or name it in the pod annotation dpg.io/allow-capture-bypass: its traffic is then not guaranteed to pass the gateway`,
      );
    }
  }
  const restartPolicy = spec.restartPolicy ?? 'Always';
  if (!settings.nativeSidecar && restartPolicy !== 'Always') {
    problems.push(
      `dpg.io/native-sidecar: "false" cannot be used for a run-to-completion pod (restartPolicy ${String(restartPolicy)}): the gateway container would keep it running forever; use native sidecars (Kubernetes 1.29+) or opt the pod out`,
    );
  }
  return problems;
}

/**
 * Transparent mode: app containers that say nothing about capabilities lose the runtime defaults
 * that lead around capture (refusals() has already refused every other exposure); containers the
 * pod allows to bypass are left as they are and named in the notes. Returns the containers changed.
 */
function guardCapture(spec: JsonObject, settings: InjectionSettings, notes: string[]): string[] {
  const changed: string[] = [];
  for (const c of [...objectsOf(spec.initContainers), ...objectsOf(spec.containers)]) {
    const name = String(c.name);
    const exposure = captureExposure(c, spec);
    if (settings.captureBypass.includes(name)) {
      const what = exposure.fixableByDrop ? [`keeps the default ${CAPTURE_DROPS.join(', ')}`] : exposure.reasons.map((r) => r.what);
      notes.push(`container ${name}: may step around capture, allowed by dpg.io/allow-capture-bypass (${what.length > 0 ? what.join('; ') : 'it needs no exemption'})`);
    } else if (exposure.fixableByDrop) {
      dropCaptureCapabilities(c);
      changed.push(name);
      notes.push(`container ${name}: capabilities ${CAPTURE_DROPS.join(', ')} dropped (with them it could step around capture); set securityContext.capabilities to choose yourself`);
    }
  }
  return changed;
}

const TWINS: Record<string, string> = {
  HTTP_PROXY: 'http_proxy',
  http_proxy: 'HTTP_PROXY',
  HTTPS_PROXY: 'https_proxy',
  https_proxy: 'HTTPS_PROXY',
  NO_PROXY: 'no_proxy',
  no_proxy: 'NO_PROXY',
};

/** Adds the trust mount and variables to one app container; returns the variables it added. */
function addTrust(c: JsonObject, settings: InjectionSettings, notes: string[], ports: GatewayPorts): { env: string[]; mounted: boolean } {
  const name = String(c.name);
  const mounts = objectsOf(c.volumeMounts);
  let mounted = false;
  if (mounts.some((m) => m.mountPath === PATH.trust)) {
    notes.push(`container ${name}: something is already mounted at ${PATH.trust}; the gateway CA files are not mounted there`);
  } else {
    c.volumeMounts = [...(Array.isArray(c.volumeMounts) ? c.volumeMounts : []), { ...TRUST_MOUNT }];
    mounted = true;
  }
  const wanted: IEnvVar[] = [...(mounted ? trustEnv() : []), ...(settings.captureMode === 'env-proxy' ? proxyVariables(settings, ports) : [])];
  const existing = new Set(objectsOf(c.env).map((e) => e.name));
  const added: IEnvVar[] = [];
  const kept: string[] = [];
  for (const v of wanted) {
    // HTTP_PROXY and http_proxy are one setting to most tools: either one set by the pod keeps both out.
    const twin = TWINS[v.name];
    if (existing.has(v.name)) kept.push(v.name);
    else if (twin !== undefined && existing.has(twin)) kept.push(twin);
    else added.push(v);
  }
  if (kept.length > 0) notes.push(`container ${name}: ${[...new Set(kept)].join(', ')} already set by the pod; left as is`);
  if (added.length > 0) {
    c.env = [...(Array.isArray(c.env) ? c.env : []), ...added];
    if (Array.isArray(c.envFrom) && c.envFrom.length > 0) {
      notes.push(`container ${name}: uses envFrom; ${added.map((v) => v.name).join(', ')} from there would be shadowed by the injected value`);
    }
  }
  return { env: added.map((v) => v.name), mounted };
}

/**
 * Without a keyring Secret each replica has keys of its own, or none (the sidecar then does not
 * start). Whether the config has reversible routes is in the ConfigMap, which the webhook and
 * `--check` do not read: so this is said for every pod without one. Under 200 characters: admission
 * warnings are cut there (admission.ts).
 */
export const NO_KEYRING_WARNING =
  'no keyring Secret (dpg.io/keyring): replicas would not share keys and reversible data (Pseudonymise, Encrypt) could not be reconstructed (warned without reading the config)';

/**
 * `kubectl logs/exec` default to the first app container rather than the gateway, and Prometheus
 * finds the admin port, unless the pod already says otherwise (any `prometheus.io/` key is the
 * user's scrape setup: none of ours is mixed into it).
 */
function podAnnotations(annotations: JsonObject, appContainers: JsonObject[], ports: GatewayPorts): Record<string, string> {
  const added: Record<string, string> = {};
  const first = appContainers[0]?.name;
  if (!Object.hasOwn(annotations, DEFAULT_CONTAINER_ANNOTATION) && typeof first === 'string') added[DEFAULT_CONTAINER_ANNOTATION] = first;
  if (!Object.keys(annotations).some((k) => k.startsWith(PROMETHEUS_PREFIX))) Object.assign(added, SCRAPE_ANNOTATIONS, { 'prometheus.io/port': String(ports.admin) });
  return added;
}

/**
 * Injects one pod template (a Pod, or the `template` of a workload). `runToCompletion` is not
 * needed: the pod's own restartPolicy says it.
 */
export function inject(input: JsonObject, options: InjectorOptions): InjectionResult {
  const template = uninject(input);
  if (!isObject(template.spec) || !Array.isArray(template.spec.containers)) {
    return { outcome: 'refused', template: input, problems: ['not a pod template: spec.containers is missing'] };
  }
  const spec = template.spec;
  const skip = skipReason(template, spec);
  if (skip) return { outcome: 'skipped', template: input, reason: skip };

  const metadata = child(template, 'metadata');
  const annotations = isObject(metadata.annotations) ? metadata.annotations : {};
  const { settings, problems: settingProblems } = applyAnnotations(options.defaults, annotations);
  const problems = [...settingProblems.map((p) => `${p.key}: ${p.message}`), ...refusals(spec, settings, options.image)];
  if (problems.length > 0) return { outcome: 'refused', template: input, problems };

  // A mesh sidecar beside ours: other ports, and its proxy's UID exempt from our capture (mesh.ts).
  const mesh = detectMesh(template);
  const ports = mesh ? MESH_PORTS : DEFAULT_PORTS;
  const parts = buildParts(settings, options, ports, mesh);
  const notes: string[] = [];
  if (mesh) {
    notes.push(
      `service mesh ${mesh.name} (${mesh.seenBy}): the gateway listens on ${ports.redirect} (transparent), ${ports.forward} (forward) and ${ports.admin} (admin), and its capture exempts the mesh proxy's UID ${mesh.proxyUid}; the gateway's upstream connections pass the mesh`,
    );
  }
  const podAdded = podAnnotations(annotations, objectsOf(spec.containers), ports);
  const capabilityDrops = settings.captureMode === 'transparent' ? guardCapture(spec, settings, notes) : [];
  const env: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  const trustMounts: string[] = [];
  const wantsTrust = (c: JsonObject) => settings.caContainers === '*' || settings.caContainers.includes(c.name as string);
  for (const c of [...objectsOf(spec.initContainers), ...objectsOf(spec.containers)]) {
    if (!wantsTrust(c)) continue;
    const added = addTrust(c, settings, notes, ports);
    if (added.env.length > 0) env[String(c.name)] = added.env;
    if (added.mounted) trustMounts.push(String(c.name));
  }

  // Ours first: capture and trust before anything else runs, the gateway before the user's init containers.
  setList(spec, 'initContainers', [...parts.initContainers, ...(Array.isArray(spec.initContainers) ? spec.initContainers : [])]);
  spec.containers = [...parts.containers, ...(spec.containers as unknown[])];
  spec.volumes = [...(Array.isArray(spec.volumes) ? spec.volumes : []), ...parts.volumes];

  const status: InjectionStatus = {
    version: options.version,
    configHash: configHash(settings, options),
    captureMode: settings.captureMode,
    nativeSidecar: settings.nativeSidecar,
    initContainers: parts.initContainers.map((c: IContainer) => c.name),
    containers: parts.containers.map((c: IContainer) => c.name),
    volumes: parts.volumes.map((v) => v.name),
    env,
    trustMounts,
    capabilityDrops,
    annotations: Object.keys(podAdded),
  };
  const out: JsonObject = { ...annotations, ...podAdded, [STATUS_ANNOTATION]: encodeStatus(status) };
  if (notes.length > 0) out[NOTES_ANNOTATION] = JSON.stringify(notes);
  metadata.annotations = out;
  return { outcome: 'injected', template, notes, status, warnings: settings.keyringSecret ? [] : [NO_KEYRING_WARNING] };
}

/** The proxy container of an injected pod, wherever the layout put it. */
export function findProxy(spec: JsonObject): IContainer | undefined {
  const all = [...objectsOf(spec.initContainers), ...objectsOf(spec.containers)];
  return all.find((c) => c.name === CONTAINER.proxy) as IContainer | undefined;
}
