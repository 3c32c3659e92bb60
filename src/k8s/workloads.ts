// Where each workload kind keeps its pod template, so `dpg inject` can inject every kind the way the
// webhook injects pods. Kinds are matched with their API group: a custom resource that happens to be
// called "Deployment" is not ours to change.

import type { JsonObject } from './inject.ts';

const TEMPLATE_PATHS: Record<string, readonly string[]> = {
  '/Pod': [],
  '/ReplicationController': ['spec', 'template'],
  'apps/Deployment': ['spec', 'template'],
  'apps/StatefulSet': ['spec', 'template'],
  'apps/DaemonSet': ['spec', 'template'],
  'apps/ReplicaSet': ['spec', 'template'],
  'batch/Job': ['spec', 'template'],
  'batch/CronJob': ['spec', 'jobTemplate', 'spec', 'template'],
};

/** Kinds `dpg inject` changes, as `group/Kind` (core group empty). */
export const INJECTABLE_KINDS = Object.keys(TEMPLATE_PATHS);

function groupOf(apiVersion: unknown): string | undefined {
  if (typeof apiVersion !== 'string') return undefined;
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** The path of the pod template inside an object, or undefined for kinds that have none. */
export function templatePath(object: JsonObject): readonly string[] | undefined {
  const group = groupOf(object.apiVersion);
  if (group === undefined || typeof object.kind !== 'string') return undefined;
  return TEMPLATE_PATHS[`${group}/${object.kind}`];
}

/** `List` (v1) and every `*List` kind carry their objects in `items`. */
export function isList(object: JsonObject): boolean {
  return typeof object.kind === 'string' && object.kind.endsWith('List') && Array.isArray(object.items);
}

/** A short name for messages: `deployment/orders`, `pod/(generated)`. */
export function describe(object: JsonObject): string {
  const kind = typeof object.kind === 'string' ? object.kind.toLowerCase() : 'object';
  const metadata = object.metadata as JsonObject | undefined;
  const name = typeof metadata?.name === 'string' ? metadata.name : typeof metadata?.generateName === 'string' ? `${metadata.generateName}*` : '(unnamed)';
  return `${kind}/${name}`;
}
