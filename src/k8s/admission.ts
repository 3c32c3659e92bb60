// AdmissionReview (admission.k8s.io/v1) in, AdmissionReview out: the webhook's decisions, without
// any I/O. Mutation answers with the JSON Patch from the pod as sent to the pod inject() returns;
// validation (for clusters without ValidatingAdmissionPolicy) denies pods injection would change.

import { podPatch } from './patch.ts';
import { inject, type InjectorOptions, type JsonObject } from './inject.ts';

export type AdmissionKind = 'mutate' | 'validate';

/** What happened, for metrics and logs (bounded set: safe as a label). */
export type AdmissionOutcome = 'injected' | 'unchanged' | 'skipped' | 'excluded' | 'ignored' | 'refused' | 'denied' | 'allowed';

export interface AdmissionSettings {
  readonly injector: InjectorOptions;
  /** Namespaces never touched, whatever the webhook configuration's selectors say. */
  readonly excludedNamespaces: ReadonlySet<string>;
}

export type AdmissionAnswer =
  | { readonly ok: true; readonly review: JsonObject; readonly outcome: AdmissionOutcome; readonly namespace: string; readonly pod: string; readonly dryRun: boolean }
  | { readonly ok: false; readonly error: string };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
// Kubernetes sends a UUID; allow any short printable id, never echo anything longer.
const UID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Admission warnings are shown by kubectl; the API server truncates long ones, so keep them short. */
function warnings(notes: readonly string[]): string[] {
  return notes.slice(0, 10).map((n) => (n.length > 200 ? `${n.slice(0, 197)}...` : n));
}

function respond(uid: string, response: JsonObject): JsonObject {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, ...response } };
}

function podName(pod: JsonObject): string {
  const m = isObject(pod.metadata) ? pod.metadata : {};
  if (typeof m.name === 'string' && m.name) return m.name;
  return typeof m.generateName === 'string' ? `${m.generateName}*` : '(unnamed)';
}

/** Decides one review. `{ ok: false }` is a malformed review: the server answers 400. */
export function decide(body: unknown, kind: AdmissionKind, settings: AdmissionSettings): AdmissionAnswer {
  if (!isObject(body) || body.apiVersion !== 'admission.k8s.io/v1' || body.kind !== 'AdmissionReview') {
    return { ok: false, error: 'expected an AdmissionReview of admission.k8s.io/v1' };
  }
  const request = body.request;
  if (!isObject(request)) return { ok: false, error: 'AdmissionReview has no request' };
  if (typeof request.uid !== 'string' || !UID.test(request.uid)) return { ok: false, error: 'AdmissionReview request.uid is missing or malformed' };
  const uid = request.uid;
  const dryRun = request.dryRun === true;
  const resource = isObject(request.kind) ? request.kind : {};
  const pod = request.object;
  const namespace = typeof request.namespace === 'string' ? request.namespace : '';
  const base = { ok: true as const, namespace, dryRun };

  const isPodCreate = resource.group === '' && resource.kind === 'Pod' && request.operation === 'CREATE' && request.subResource === undefined;
  if (!isPodCreate) return { ...base, pod: '', outcome: 'ignored', review: respond(uid, { allowed: true }) };
  if (!isObject(pod)) return { ok: false, error: 'AdmissionReview request.object is not a pod' };
  const name = podName(pod);
  if (settings.excludedNamespaces.has(namespace)) return { ...base, pod: name, outcome: 'excluded', review: respond(uid, { allowed: true }) };

  const result = inject(pod, settings.injector);
  if (result.outcome === 'skipped') return { ...base, pod: name, outcome: 'skipped', review: respond(uid, { allowed: true }) };
  if (result.outcome === 'refused') {
    const message = `dpg: pod refused by the sidecar injector: ${result.problems.join('; ')}`;
    return {
      ...base,
      pod: name,
      outcome: 'refused',
      review: respond(uid, { allowed: false, status: { status: 'Failure', code: 403, reason: 'Forbidden', message: message.slice(0, 2000) } }),
    };
  }
  const patch = podPatch(pod, result.template);
  if (kind === 'validate') {
    if (patch.length === 0) return { ...base, pod: name, outcome: 'allowed', review: respond(uid, { allowed: true }) };
    const message = `dpg: pod is not protected: it is not injected as dpg ${settings.injector.version} would inject it (is the sidecar injector running?)`;
    return { ...base, pod: name, outcome: 'denied', review: respond(uid, { allowed: false, status: { status: 'Failure', code: 403, reason: 'Forbidden', message } }) };
  }
  const risks = result.warnings.map((w) => `dpg: ${w}`);
  if (patch.length === 0) {
    // Already injected: its notes were said when it was; its risks still hold.
    return { ...base, pod: name, outcome: 'unchanged', review: respond(uid, risks.length > 0 ? { allowed: true, warnings: warnings(risks) } : { allowed: true }) };
  }
  // The pod's risks first: the notes after them may be cut at ten.
  const said = warnings([...risks, ...result.notes]);
  const response: JsonObject = {
    allowed: true,
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
  };
  if (said.length > 0) response.warnings = said;
  return { ...base, pod: name, outcome: 'injected', review: respond(uid, response) };
}
