// A service mesh's sidecar in the same pod (Istio's Envoy, Linkerd's proxy). Both meshes capture the
// pod's outbound TCP with iptables as the gateway does; they coexist when (1) the gateway's capture
// exempts the mesh proxy's UID, so the mesh proxy's upstream connections (which carry what the
// gateway already protected) are not captured again, and (2) the gateway listens on ports the mesh
// proxy does not (Envoy holds 15001, 15006, 15020, 15021, 15090 on every address). The gateway's
// own upstream connections are then captured by the mesh, as the app's would be without the gateway
// (docs/kubernetes.md, "Service mesh").

type JsonObject = Record<string, unknown>;

export interface Mesh {
  readonly name: 'istio' | 'linkerd';
  /** The mesh proxy's UID, exempt from the gateway's capture. */
  readonly proxyUid: number;
  /** What showed the mesh (for the injection notes). */
  readonly seenBy: string;
}

interface MeshSpec {
  readonly name: Mesh['name'];
  readonly defaultUid: number;
  readonly proxyContainer: string;
  readonly containers: readonly string[];
  /** Annotation or label keys whose presence (any value) shows the mesh's injection. */
  readonly statusKeys: readonly string[];
  /** Annotation or label key and the value that asks the mesh to inject this pod. */
  readonly injectKey: string;
  readonly injectValues: readonly string[];
}

const MESHES: readonly MeshSpec[] = [
  { name: 'istio', defaultUid: 1337, proxyContainer: 'istio-proxy', containers: ['istio-proxy', 'istio-init', 'istio-validation'], statusKeys: ['sidecar.istio.io/status'], injectKey: 'sidecar.istio.io/inject', injectValues: ['true'] },
  { name: 'linkerd', defaultUid: 2102, proxyContainer: 'linkerd-proxy', containers: ['linkerd-proxy', 'linkerd-init', 'linkerd-network-validator'], statusKeys: ['linkerd.io/proxy-version'], injectKey: 'linkerd.io/inject', injectValues: ['enabled', 'ingress'] },
];

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v);
const objects = (v: unknown): JsonObject[] => (Array.isArray(v) ? v.filter(isObject) : []);

/**
 * The mesh this pod template carries or asks for, from its containers, annotations and labels.
 * A namespace-wide injection label is not visible here: the webhook's reinvocation (IfNeeded)
 * injects again once the mesh's own webhook has added its containers.
 */
export function detectMesh(template: JsonObject): Mesh | undefined {
  const metadata = isObject(template.metadata) ? template.metadata : {};
  const annotations = isObject(metadata.annotations) ? metadata.annotations : {};
  const labels = isObject(metadata.labels) ? metadata.labels : {};
  const spec = isObject(template.spec) ? template.spec : {};
  const all = [...objects(spec.initContainers), ...objects(spec.containers)];
  for (const m of MESHES) {
    const proxy = all.find((c) => c.name === m.proxyContainer);
    const runAs = proxy && isObject(proxy.securityContext) ? proxy.securityContext.runAsUser : undefined;
    const proxyUid = typeof runAs === 'number' && Number.isInteger(runAs) && runAs > 0 ? runAs : m.defaultUid;
    const container = all.find((c) => m.containers.includes(c.name as string));
    if (container) return { name: m.name, proxyUid, seenBy: `container ${String(container.name)}` };
    const key = m.statusKeys.find((k) => Object.hasOwn(annotations, k));
    if (key) return { name: m.name, proxyUid, seenBy: `annotation ${key}` };
    for (const [where, map] of [['annotation', annotations], ['label', labels]] as const) {
      const v = map[m.injectKey];
      if (typeof v === 'string' && m.injectValues.includes(v)) return { name: m.name, proxyUid, seenBy: `${where} ${m.injectKey}=${v}` };
    }
  }
  return undefined;
}
