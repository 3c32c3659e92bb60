// Whole gateway (HTTP and gRPC listeners on 127.0.0.1:0): a partner's token carries the scope
// values its client config allows, every door refuses the others, and the same request gives the
// same pseudonym over HTTP and gRPC (an id of 0 is "not given" on both).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/core/logger.ts';
import { startGateway, type Gateway } from '../../src/main.ts';
import { hashSecret } from '../../src/identity/secret-hash.ts';
import { DEFAULT_MANIFESTS } from '../helpers/engine.ts';
import { testGatewayConfig } from '../helpers/gateway-config.ts';
import { identityConfig, CLIENTS } from '../helpers/identity.ts';
import { multipart, postJson, tokenFor } from './http-helpers.ts';
import { createClient, expectFailure, protectValues, toRows } from '../transport/grpc/client.ts';
import * as grpc from '@grpc/grpc-js';
import { request } from 'undici';

const PARTNER = { id: 'partner-7', secret: 'partner-7-secret-9e8d' };

let dataDir: string;
let gateway: Gateway;
let base: string;
let client: grpc.Client;
let partner: string;
let full: string;

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'dpg-scope-'));
  const identity = identityConfig(join(dataDir, 'identity'));
  const config = {
    ...testGatewayConfig(dataDir, {
      identity: {
        clients: [
          ...identity.clients,
          { id: PARTNER.id, secretHash: hashSecret(PARTNER.secret), scopes: ['protect', 'reconstruct'], pseudonymScope: { thirdPartyIds: [7], dataUsageIds: [0], organizationWide: false } },
        ],
      },
    }),
    manifests: DEFAULT_MANIFESTS,
  };
  gateway = await startGateway(config, { logger: createLogger({ level: 'silent' }) });
  base = `http://127.0.0.1:${gateway.addresses.http.port}`;
  client = createClient(gateway.addresses.grpc.port);
  partner = await tokenFor(base, PARTNER);
  full = await tokenFor(base, CLIENTS.full);
});

after(async () => {
  client.close();
  await gateway.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const protect = (token: string, body: Record<string, unknown>) =>
  postJson(base, '/api/protect', { manifestName: 'customer', jobType: 'Pseudonymise', dataSet: { email: 'jane.doe@example.com' }, ...body }, { 'x-resource-token': token });

const rows = (token: string, jobConfig: Record<string, unknown>) =>
  protectValues(client, { job_config: { configuration_name: 'customer', job_type: 'Pseudonymise', ...jobConfig }, labels: ['email'], rows: toRows([['jane.doe@example.com']]) }, token);

describe('pseudonym scopes under the gateway\'s control', () => {
  test('a partner computes its own pseudonyms, over HTTP and gRPC alike', async () => {
    const http = await protect(partner, { thirdPartyId: 7 });
    assert.equal(http.status, 200, http.text);
    const grpcOut = await rows(partner, { third_party_id: 7 });
    assert.equal(grpcOut.rows[0][0], http.json.dataSet.email);
  });

  test('another partner\'s scope, no scope and org-wide are refused at every door', async () => {
    for (const body of [{ thirdPartyId: 8 }, {}, { thirdPartyId: 0 }, { thirdPartyId: 7, dataUsageId: 1 }, { thirdPartyId: 7, isDataConsistentAcrossOrganization: true }]) {
      const res = await protect(partner, body);
      assert.equal(res.status, 403, JSON.stringify(body));
      assert.equal(res.json.code, 'FORBIDDEN');
    }
    for (const jc of [{ third_party_id: 8 }, {}, { third_party_id: 7, is_data_consistent_across_organization: true }]) {
      const failure = await expectFailure(rows(partner, jc));
      assert.equal(failure.code, grpc.status.PERMISSION_DENIED, JSON.stringify(jc));
      assert.equal(failure.trailers['dpg-error-code'], 'FORBIDDEN');
    }
    const form = multipart([
      { name: 'protectFileDataset', contentType: 'application/json', body: JSON.stringify({ manifestName: 'customer', jobType: 'Pseudonymise', thirdPartyId: 8 }) },
      { name: 'file', filename: 'in.csv', body: 'email\njane.doe@example.com\n' },
    ]);
    const file = await request(`${base}/file/protect`, { method: 'POST', headers: { 'content-type': form.contentType, 'x-resource-token': partner }, body: form.body });
    assert.equal(file.statusCode, 403, await file.body.text());
    // Reconstruct too: reversing another partner's pseudonyms needs their scope.
    const back = await postJson(base, '/api/protect', { manifestName: 'customer', jobType: 'Reconstruct', thirdPartyId: 8, dataSet: { email: 'x@example.com' } }, { 'x-resource-token': partner });
    assert.equal(back.status, 403);
  });

  test('thirdPartyId 0 over HTTP, third_party_id 0 over gRPC and no id at all give one scope', async () => {
    const absent = await protect(full, {});
    const zero = await protect(full, { thirdPartyId: 0, dataUsageId: 0 });
    const grpcZero = await rows(full, { third_party_id: 0, data_usage_id: 0 });
    assert.equal(absent.status, 200, absent.text);
    assert.equal(zero.json.dataSet.email, absent.json.dataSet.email);
    assert.equal(grpcZero.rows[0][0], absent.json.dataSet.email);
    const seven = await protect(full, { thirdPartyId: 7 });
    assert.notEqual(seven.json.dataSet.email, absent.json.dataSet.email);
    assert.equal(seven.json.dataSet.email, (await rows(full, { third_party_id: 7 })).rows[0][0]);
  });

  test('forward jobs refuse a snapshot date; Reconstruct takes one with a zone, not in the future', async () => {
    const fwd = await protect(full, { snapshotDate: '2025-01-01T00:00:00Z' });
    assert.equal(fwd.status, 400);
    assert.match(fwd.text, /snapshotDate applies only to Reconstruct and Decrypt/);
    const pseudo = await protect(full, {});
    const reconstruct = (snapshotDate: string) =>
      postJson(base, '/api/protect', { manifestName: 'customer', jobType: 'Reconstruct', snapshotDate, dataSet: pseudo.json.dataSet }, { 'x-resource-token': full });
    const ok = await reconstruct(new Date().toISOString());
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.dataSet.email, 'jane.doe@example.com');
    assert.equal((await reconstruct('2025-01-01T00:00:00')).status, 400, 'no zone');
    assert.equal((await reconstruct(new Date(Date.now() + 3_600_000).toISOString())).status, 400, 'future');
    const failure = await expectFailure(rows(full, { snapshot_date: '2025-01-01T00:00:00Z' }));
    assert.equal(failure.code, grpc.status.INVALID_ARGUMENT);
    assert.match(failure.details, /job_config\.snapshot_date/);
  });
});
