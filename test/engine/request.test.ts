// parseJobRequest, the one parser every door uses: scope ids where 0 means "not given" (as in
// gRPC), and snapshot dates only for the reverse jobs, with a time zone, never in the future.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError } from '../../src/core/errors.ts';
import { parseJobRequest, type RawJobRequest } from '../../src/engine/request.ts';
import { scopeOf } from '../../src/engine/keys.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const parse = (raw: RawJobRequest) => parseJobRequest({ manifestName: 'customer', jobType: 'Reconstruct', ...raw }, 'JSON', NOW);

function problem(raw: RawJobRequest): string {
  try {
    parse(raw);
  } catch (err) {
    assert.ok(err instanceof DpgError && err.code === 'INVALID_REQUEST');
    return err.errors!.map((e) => `${e.location} ${e.reason}`).join('; ');
  }
  throw new Error('expected INVALID_REQUEST');
}

describe('parseJobRequest', () => {
  it('thirdPartyId and dataUsageId 0 mean "not given", so HTTP and gRPC give one scope', () => {
    const zero = parse({ thirdPartyId: 0, dataUsageId: '0' }).context;
    const absent = parse({}).context;
    assert.equal(zero.thirdPartyId, undefined);
    assert.equal(zero.dataUsageId, undefined);
    assert.equal(scopeOf(zero), scopeOf(absent));
    assert.equal(scopeOf({ requestId: 'r', thirdPartyId: 0 }), 'tp=-;du=-');
    assert.equal(scopeOf(parse({ thirdPartyId: 7 }).context), 'tp=7;du=-');
  });

  it('snapshotDate: Reconstruct and Decrypt only', () => {
    for (const jobType of ['Pseudonymise', 'Encrypt', 'Anonymise', 'Mask', 'Restrict']) {
      assert.match(problem({ jobType, snapshotDate: '2025-01-01T00:00:00Z' }), /^snapshotDate applies only to Reconstruct and Decrypt/);
    }
    assert.equal(parse({ jobType: 'Decrypt', snapshotDate: '2025-01-01T00:00:00Z' }).context.snapshotDate?.toISOString(), '2025-01-01T00:00:00.000Z');
    assert.equal(parse({ snapshotDate: '2025-01-01T02:00:00+02:00' }).context.snapshotDate?.toISOString(), '2025-01-01T00:00:00.000Z');
  });

  it('snapshotDate needs a time zone', () => {
    for (const text of ['2025-01-01', '2025-01-01T00:00:00', '2025-01-01 00:00:00Z', 'yesterday', '2025-13-01T00:00:00Z']) {
      assert.match(problem({ snapshotDate: text }), /snapshotDate must be an ISO 8601 timestamp with a time zone/, text);
    }
  });

  it('snapshotDate in the future is refused; within 30 s of the clock it counts as now', () => {
    assert.match(problem({ snapshotDate: '2026-06-01T12:01:00Z' }), /snapshotDate must not be in the future/);
    assert.equal(parse({ snapshotDate: '2026-06-01T12:00:20Z' }).context.snapshotDate?.getTime(), NOW);
  });
});
