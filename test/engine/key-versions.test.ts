// Key versions under the gateway's control: new data always takes the version active now, a
// snapshot date only steers Reconstruct and Decrypt, a retired version is reverse only.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError } from '../../src/core/errors.ts';
import type { JobType, RequestContext } from '../../src/core/types.ts';
import { Keyring } from '../../src/crypto/keyring.ts';
import { createEngine, type ProtectionEngine } from '../../src/engine/engine.ts';
import { DEFAULT_MANIFESTS, job, testKeyring } from '../helpers/engine.ts';

/** The test keyring (v1 from 2020, v2 from 2025-01-01) seen from a clock set to `now`. */
function engineAt(now: string, keyring: Keyring = testKeyring()): ProtectionEngine {
  return createEngine({ manifestsDir: DEFAULT_MANIFESTS, keyring, now: () => new Date(now) });
}

function run(engine: ProtectionEngine, jobType: JobType, data: unknown, context: Partial<RequestContext> = {}): Record<string, unknown> {
  return engine.protectDocument(job('customer', jobType, context), structuredClone(data)).dataSet as Record<string, unknown>;
}

const card = { cardNumber: '4111111111111111' };
const in2024 = engineAt('2024-06-01T00:00:00Z');
const in2026 = engineAt('2026-06-01T00:00:00Z');

describe('key versions', () => {
  it('forward jobs use the version active now, whatever snapshot date they carry', () => {
    const now = run(in2026, 'Pseudonymise', card).cardNumber;
    // The engine ignores a forward job's snapshot date (the doors refuse one, see request.test.ts).
    assert.equal(run(in2026, 'Pseudonymise', card, { snapshotDate: new Date('2024-06-01T00:00:00Z') }).cardNumber, now);
    assert.notEqual(run(in2024, 'Pseudonymise', card).cardNumber, now, 'another version in 2024');
    assert.match(String(run(in2026, 'Encrypt', card, { snapshotDate: new Date('2024-06-01T00:00:00Z') }).cardNumber), /:default:2:/);
  });

  it('Reconstruct selects the version active at the snapshot date; Decrypt follows the token', () => {
    const old = run(in2024, 'Pseudonymise', card).cardNumber;
    const fresh = run(in2026, 'Pseudonymise', card).cardNumber;
    assert.equal(run(in2026, 'Reconstruct', { cardNumber: old }, { snapshotDate: new Date('2024-12-31T23:59:59Z') }).cardNumber, card.cardNumber);
    assert.equal(run(in2026, 'Reconstruct', { cardNumber: fresh }).cardNumber, card.cardNumber);
    assert.notEqual(run(in2026, 'Reconstruct', { cardNumber: old }).cardNumber, card.cardNumber, 'wrong version, wrong value');
    const token = run(in2024, 'Encrypt', card).cardNumber;
    assert.match(String(token), /:default:1:/);
    assert.equal(run(in2026, 'Decrypt', { cardNumber: token }).cardNumber, card.cardNumber);
  });

  it('a retired version protects nothing new but still reverses what it protected', () => {
    const material = (n: number) => Buffer.alloc(32, n).toString('base64');
    const ring = (retired: boolean) =>
      Keyring.fromDocument(
        {
          keys: [
            {
              id: 'default',
              versions: [
                { version: 1, activeFrom: '2020-01-01T00:00:00Z', material: material(1) },
                { version: 2, activeFrom: '2025-01-01T00:00:00Z', material: material(2), retired },
              ],
            },
          ],
        },
        'test',
      );
    const before = engineAt('2026-06-01T00:00:00Z', ring(false));
    const pseudonym = run(before, 'Pseudonymise', card).cardNumber;
    const token = run(before, 'Encrypt', card).cardNumber;
    const retired = engineAt('2026-06-01T00:00:00Z', ring(true));
    for (const jobType of ['Pseudonymise', 'Encrypt', 'Anonymise'] as const) {
      assert.throws(
        () => run(retired, jobType, { ...card, email: 'jane@example.com' }),
        (err: unknown) => err instanceof DpgError && err.code === 'KEY_RETIRED' && err.status === 503,
        jobType,
      );
    }
    assert.equal(run(retired, 'Mask', card).cardNumber, '************1111', 'jobs without keys go on');
    assert.equal(run(retired, 'Reconstruct', { cardNumber: pseudonym }).cardNumber, card.cardNumber);
    assert.equal(run(retired, 'Decrypt', { cardNumber: token }).cardNumber, card.cardNumber);
    assert.match(ring(true).explain()[0], /v2 from 2025-01-01T00:00:00.000Z \(retired: reverse only\)/);
    assert.deepEqual(ring(false).retiredNowWarnings(new Date('2026-06-01T00:00:00Z')), []);
    assert.match(ring(true).retiredNowWarnings(new Date('2026-06-01T00:00:00Z'))[0]!, /^key default: the version active now \(v2\) is retired/);
    assert.deepEqual(ring(true).retiredNowWarnings(new Date('2024-06-01T00:00:00Z')), [], 'v1 was active then');
    // A newer version lifts it: new data goes under v3.
    const rotated = Keyring.fromDocument(
      {
        keys: [
          {
            id: 'default',
            versions: [
              { version: 2, activeFrom: '2025-01-01T00:00:00Z', material: material(2), retired: true },
              { version: 3, activeFrom: '2026-01-01T00:00:00Z', material: material(3) },
            ],
          },
        ],
      },
      'test',
    );
    assert.match(String(run(engineAt('2026-06-01T00:00:00Z', rotated), 'Encrypt', card).cardNumber), /:default:3:/);
  });

  it('retired must be a boolean', () => {
    assert.throws(
      () => Keyring.fromDocument({ keys: [{ id: 'k', versions: [{ version: 1, activeFrom: '2020-01-01T00:00:00Z', material: Buffer.alloc(32).toString('base64'), retired: 'yes' }] }] }, 'f'),
      /retired: must be true or false/,
    );
  });
});
