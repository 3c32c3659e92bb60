// The status annotation: what injection added to a pod (so it can be taken out again exactly) and
// with which version and settings. Injection always starts by removing what the status lists, which
// makes it idempotent, lets a newer injector replace an older one's containers on re-injection, and
// picks up containers another webhook added in between (reinvocation).

import { createHash } from 'node:crypto';
import type { InjectionSettings } from './settings.ts';

export interface InjectionStatus {
  readonly version: string;
  /** sha256 (first 16 hex digits) of the settings and image: equal hashes, equal injection. */
  readonly configHash: string;
  readonly captureMode: InjectionSettings['captureMode'];
  readonly nativeSidecar: boolean;
  readonly initContainers: readonly string[];
  readonly containers: readonly string[];
  readonly volumes: readonly string[];
  /** Per container: the variables injection added (never one the pod already had). */
  readonly env: Readonly<Record<string, readonly string[]>>;
  /** Containers that got the trust volume mounted. */
  readonly trustMounts: readonly string[];
  /** App containers that got `capabilities.drop` (transparent mode; absent in older statuses). */
  readonly capabilityDrops?: readonly string[];
  /** Pod annotations injection added (default container, scrape annotations; absent in older statuses). */
  readonly annotations?: readonly string[];
}

/** Key order of JSON.stringify follows insertion; sort recursively so the hash is canonical. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

export function configHash(settings: InjectionSettings, image: { image: string; imagePullPolicy?: string }): string {
  const text = JSON.stringify(canonical({ settings, image: image.image, imagePullPolicy: image.imagePullPolicy }));
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

export function encodeStatus(status: InjectionStatus): string {
  return JSON.stringify(status);
}

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** Reads a status annotation; undefined when absent or not one of ours (then nothing is removed by it). */
export function decodeStatus(text: unknown): InjectionStatus | undefined {
  if (typeof text !== 'string') return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const s = v as Record<string, unknown>;
  const env = s.env;
  if (
    typeof s.version !== 'string' ||
    typeof s.configHash !== 'string' ||
    !isStringList(s.initContainers) ||
    !isStringList(s.containers) ||
    !isStringList(s.volumes) ||
    !isStringList(s.trustMounts) ||
    (s.capabilityDrops !== undefined && !isStringList(s.capabilityDrops)) ||
    (s.annotations !== undefined && !isStringList(s.annotations)) ||
    !env ||
    typeof env !== 'object' ||
    Array.isArray(env) ||
    !Object.values(env).every(isStringList)
  ) {
    return undefined;
  }
  return s as unknown as InjectionStatus;
}
