// Builds the real engine over the default manifests (config/manifests) with a fixed test keyring,
// for tests of every door. Keys here are test constants, never used outside tests.

import { fileURLToPath } from 'node:url';
import { Keyring } from '../../src/crypto/keyring.ts';
import { createEngine, type ProtectionEngine } from '../../src/engine/engine.ts';
import type { JobSpec, JobType, DataSetType, RequestContext } from '../../src/core/types.ts';

export const DEFAULT_MANIFESTS = fileURLToPath(new URL('../../config/manifests', import.meta.url));

/** Two versions of one key: v1 from 2020, v2 from 2025-01-01 (a rotation). */
export function testKeyring(): Keyring {
  return Keyring.fromDocument(
    {
      defaultKey: 'default',
      keys: [
        {
          id: 'default',
          versions: [
            { version: 1, activeFrom: '2020-01-01T00:00:00Z', material: Buffer.alloc(32, 1).toString('base64') },
            { version: 2, activeFrom: '2025-01-01T00:00:00Z', material: Buffer.alloc(32, 2).toString('base64') },
          ],
        },
      ],
    },
    'test keyring',
  );
}

export function testEngine(manifestsDir: string = DEFAULT_MANIFESTS): ProtectionEngine {
  return createEngine({ manifestsDir, keyring: testKeyring() });
}

export function job(
  manifestName: string,
  jobType: JobType,
  context: Partial<RequestContext> = {},
  dataSetType: DataSetType = 'JSON',
): JobSpec {
  return { manifestName, jobType, dataSetType, context: { requestId: 'test', ...context } };
}
