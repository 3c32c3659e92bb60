// Overload at the gRPC door (issue 18 item 4), real listener and client: a call over the door's
// request or byte bound is refused before any work with UNAVAILABLE, dpg-error-code OVERLOADED and
// a grpc-retry-pushback-ms trailer; once the door has room again, the same call is served.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type * as grpc from '@grpc/grpc-js';
import { Overload } from '../../../src/core/overload.ts';
import { createClient, expectFailure, protectValues, toRows } from './client.ts';
import { startGrpcTestGateway, type GrpcTestGateway } from './gateway.ts';

let gw: GrpcTestGateway;
let client: grpc.Client;
let token: string;
const overload = new Overload({ maxRequestsInFlight: 2, maxBytesInFlight: 64, maxEventLoopDelayMs: 0, retryAfterSeconds: 2 });
const call = { job_config: { configuration_name: 'customer', job_type: 'Mask' }, labels: ['cardNumber'], rows: toRows([['4111 1111 1111 1111']]) };

before(async () => {
  gw = await startGrpcTestGateway({ overload });
  client = createClient(gw.port);
  token = await gw.token('full');
});
after(async () => {
  client?.close();
  await gw?.close();
  overload.close();
});

describe('ProtectValues under overload', () => {
  test('over the request bound: UNAVAILABLE with OVERLOADED and a retry pushback; served again after release', async () => {
    const gate = overload.gate('grpc');
    const held = [gate.admit(0), gate.admit(0)];
    const failure = await expectFailure(protectValues(client, call, token));
    assert.equal(failure.code, 14, failure.details);
    assert.equal(failure.trailers['dpg-error-code'], 'OVERLOADED');
    assert.equal(failure.trailers['grpc-retry-pushback-ms'], '2000');
    assert.match(failure.details, /grpc: requests in flight/);
    for (const h of held) if (typeof h !== 'string') h.release();
    const res = await protectValues(client, call, token);
    assert.equal(res.rows[0][0], '**** **** **** 1111');
    assert.equal(gate.requests, 0);
  });

  test('over the byte bound: the message size on the wire is counted', async () => {
    const gate = overload.gate('grpc');
    const held = gate.admit(0);
    const big = { ...call, rows: toRows([['4111 1111 1111 1111'], ['4111 1111 1111 1111'], ['4111 1111 1111 1111']]) };
    const failure = await expectFailure(protectValues(client, big, token));
    assert.equal(failure.trailers['dpg-error-code'], 'OVERLOADED');
    assert.match(failure.details, /request bytes in flight/);
    if (typeof held !== 'string') held.release();
    // Alone at the door, even a message over the byte bound is served (its own size limit governs it).
    assert.equal((await protectValues(client, big, token)).rows.length, 3);
  });
});
