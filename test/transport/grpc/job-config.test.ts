// JobConfig → JobSpec: proto3 defaults read as "not set", problems named with the proto field names.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError } from '../../../src/core/errors.ts';
import { grpcFieldName, parseCellType, parseGrpcJob } from '../../../src/transport/grpc/job-config.ts';
import { checkTable } from '../../../src/transport/grpc/protect-values.ts';
import { emptyJobConfig, type JobConfigMessage } from '../../../src/transport/grpc/wire.ts';

function jc(fields: Partial<JobConfigMessage>): JobConfigMessage {
  return { ...emptyJobConfig(), ...fields };
}

describe('parseGrpcJob', () => {
  test('maps every field; FILE cells are a LIST job, JSON cells a JSON job', () => {
    const { job, cellType } = parseGrpcJob(
      jc({
        configuration_name: 'customer',
        job_type: 'reconstruct',
        dataset_type: 'file',
        country_code: 'de',
        data_owning_country_code: 'US',
        data_usage_id: 7,
        third_party_id: 42,
        execution_context: 'batch',
        api_type: 'bulk',
        silent_mode: true,
        protect_null_values: true,
        preserve_string_length: true,
        use_restricted_text: true,
        restricted_text: '#',
        is_data_consistent_across_organization: true,
        snapshot_date: '2025-06-01T00:00:00Z',
        matching_rule: { claims: [{ attribute_name: 'region', attribute_value: 'EU' }] },
      }),
      'req-1',
    );
    assert.equal(cellType, 'FILE');
    assert.equal(job.manifestName, 'customer');
    assert.equal(job.jobType, 'Reconstruct');
    assert.equal(job.dataSetType, 'LIST');
    assert.deepEqual(
      { ...job.context, snapshotDate: job.context.snapshotDate?.toISOString() },
      {
        requestId: 'req-1',
        countryCode: 'DE',
        dataOwningCountryCode: 'US',
        dataUsageId: 7,
        thirdPartyId: 42,
        isDataConsistentAcrossOrganization: true,
        snapshotDate: '2025-06-01T00:00:00.000Z',
        claims: [{ attributeName: 'region', attributeValue: 'EU' }],
        protectNullValues: true,
        preserveStringLength: true,
        useRestrictedText: true,
        restrictedText: '#',
        silentMode: true,
        executionContext: 'batch',
        apiType: 'bulk',
        sqlDialect: undefined,
      },
    );
    assert.equal(parseGrpcJob(jc({ configuration_name: 'c', job_type: 'Mask', dataset_type: 'JSON' }), 'r').job.dataSetType, 'JSON');
  });

  test('proto3 defaults mean "not set": empty strings and zero ids', () => {
    const { job, cellType } = parseGrpcJob(jc({ configuration_name: 'customer', job_type: 'Mask' }), 'r');
    assert.equal(cellType, 'FILE');
    assert.equal(job.context.countryCode, undefined);
    assert.equal(job.context.thirdPartyId, undefined);
    assert.equal(job.context.dataUsageId, undefined);
    assert.equal(job.context.snapshotDate, undefined);
    assert.equal(job.context.executionContext, undefined);
    assert.equal(job.context.claims, undefined);
  });

  test('problems carry proto field names', () => {
    assert.throws(
      () => parseGrpcJob(jc({ job_type: 'x', country_code: 'DEU', matching_rule: { claims: [{ attribute_name: '', attribute_value: 'v' }] } }), 'r'),
      (err: DpgError) => {
        assert.equal(err.code, 'INVALID_REQUEST');
        assert.deepEqual(
          err.errors?.map((e) => e.location),
          ['job_config.configuration_name', 'job_config.job_type', 'job_config.matching_rule.claims[0].attribute_name', 'job_config.country_code'],
        );
        return true;
      },
    );
    assert.equal(grpcFieldName('requestId'), 'request_id');
    assert.equal(grpcFieldName('isDataConsistentAcrossOrganization'), 'job_config.is_data_consistent_across_organization');
  });

  test('dataset_type: FILE when empty, FILE/JSON in any case, anything else rejected', () => {
    assert.equal(parseCellType(''), 'FILE');
    assert.equal(parseCellType('Json'), 'JSON');
    assert.throws(() => parseCellType('LIST'), /dataset_type must be FILE or JSON/);
  });
});

describe('checkTable', () => {
  test('accepts a rectangular table and rejects ragged rows, empty labels and long values by position', () => {
    checkTable(['a', 'b'], [['1', '2'], ['', '']], 10);
    assert.throws(() => checkTable([], [], 10), /labels must name at least one column/);
    assert.throws(() => checkTable(['a', 'b'], [['1', '2'], ['secret']], 10), (err: DpgError) => {
      assert.equal(err.code, 'INVALID_REQUEST');
      assert.equal(err.message, 'rows[1] has 1 columns, labels name 2');
      return true;
    });
    assert.throws(() => checkTable(['a'], [['12345678901']], 10), (err: DpgError) => {
      assert.equal(err.code, 'PAYLOAD_TOO_LARGE');
      assert.ok(!err.message.includes('1234'));
      return true;
    });
  });
});
