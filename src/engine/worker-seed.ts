// What a protection worker builds its engine from: the very manifest texts and keyring the main
// thread's engine holds (not the files again: they may have changed since), and its limits. Passed
// once, as workerData, over the worker's in-process channel; it holds key material, so it is never
// logged or written anywhere.

import { Keyring } from '../crypto/keyring.ts';
import { ConfigError } from '../core/errors.ts';
import { loadManifestSources, type ManifestSource } from '../manifest/load.ts';
import { ProtectionEngine, type EngineLimits } from './engine.ts';

export interface WorkerSeed {
  readonly manifestsDir: string;
  readonly sources: readonly ManifestSource[];
  /** The keyring as a key document (Keyring.fromDocument's input). */
  readonly keyring: unknown;
  readonly limits: EngineLimits;
  /** The nice value the worker's thread takes first (limits.workers.nice; worker-priority.ts). */
  readonly nice?: number;
}

/** The key document that rebuilds `keyring` exactly: ids, versions, dates and material. */
export function keyringDocument(keyring: Keyring): unknown {
  return {
    defaultKey: keyring.defaultKid,
    keys: keyring.kids().map((id) => ({
      id,
      versions: keyring.versionsOf(id).map((v) => ({
        version: v.version,
        activeFrom: v.activeFrom.toISOString(),
        material: Buffer.from(v.material).toString('base64'),
        ...(v.retired ? { retired: true } : {}),
      })),
    })),
  };
}

/** The worker's engine. The main thread validated the same inputs, so a problem here is a bug. */
export function engineFromSeed(seed: WorkerSeed): ProtectionEngine {
  const keyring = Keyring.fromDocument(seed.keyring, '(protection worker keyring)');
  const { manifests, problems } = loadManifestSources(seed.sources);
  if (problems.length > 0) throw new ConfigError(problems);
  // No `workers` limit: a worker's engine protects inline, never starting workers of its own.
  const { workers: _none, ...limits } = seed.limits as EngineLimits & { workers?: unknown };
  return new ProtectionEngine({ manifestsDir: seed.manifestsDir, keyring, limits }, manifests);
}
