// The service definitions the server registers are written in code (no .proto parsing at start):
// they must match what @grpc/proto-loader reads from the contract files, and the hand-written
// Health codec must agree with protobufjs byte for byte.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadPackageDefinition, type MethodDefinition, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { healthServiceDefinition, protectServiceDefinition, PROTO_DIR } from '../../../src/transport/grpc/proto.ts';

const loaded = loadPackageDefinition(
  loadSync(['gateway.proto', 'grpc/health/v1/health.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO_DIR] }),
) as unknown as {
  com: { vendor: { gateway: { ProtectService: { service: ServiceDefinition } } } };
  grpc: { health: { v1: { Health: { service: ServiceDefinition } } } };
};
const contract = { protect: loaded.com.vendor.gateway.ProtectService.service, health: loaded.grpc.health.v1.Health.service };

const shape = (d: ServiceDefinition) =>
  Object.fromEntries(Object.entries(d).map(([name, m]) => [name, { path: m.path, requestStream: m.requestStream, responseStream: m.responseStream, originalName: m.originalName }]));

test('method paths and streaming shapes are the ones the .proto files declare', () => {
  assert.deepEqual(shape(protectServiceDefinition({ maxRows: 10 })), shape(contract.protect));
  assert.deepEqual(shape(healthServiceDefinition()), shape(contract.health));
});

test('the Health codec agrees with protobufjs both ways', () => {
  const ours = healthServiceDefinition().Check as MethodDefinition<{ service: string }, { status: string }>;
  const theirs = contract.health.Check as MethodDefinition<{ service: string }, { status: string }>;
  for (const service of ['', 'com.vendor.gateway.ProtectService', 'é'.repeat(100), 'x'.repeat(20_000)]) {
    assert.deepEqual(theirs.requestDeserialize(ours.requestSerialize({ service })), { service }, `encode ${service.length}`);
    assert.deepEqual(ours.requestDeserialize(theirs.requestSerialize({ service })), { service }, `decode ${service.length}`);
  }
  for (const status of ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN']) {
    // proto3 leaves the default (UNKNOWN = 0) unwritten; protobufjs writes it when set: both read back alike.
    if (status !== 'UNKNOWN') assert.deepEqual(ours.responseSerialize({ status }), theirs.responseSerialize({ status }), status);
    assert.deepEqual(theirs.responseDeserialize(ours.responseSerialize({ status })), { status });
    assert.deepEqual(ours.responseDeserialize(theirs.responseSerialize({ status })), { status });
  }
});

test('unknown fields are skipped and malformed bytes are refused', () => {
  const ours = healthServiceDefinition().Check as MethodDefinition<{ service: string }, { status: string }>;
  // field 2 varint 300, field 3 fixed64, field 4 fixed32, then service = "ab"
  const withUnknown = Buffer.from([0x10, 0xac, 0x02, 0x19, 1, 2, 3, 4, 5, 6, 7, 8, 0x25, 1, 2, 3, 4, 0x0a, 0x02, 0x61, 0x62]);
  assert.deepEqual(ours.requestDeserialize(withUnknown), { service: 'ab' });
  for (const bad of [Buffer.from([0x0a, 0x05, 0x61]), Buffer.from([0x0b]), Buffer.from([0x80]), Buffer.from([0x02, 0x00])]) {
    assert.throws(() => ours.requestDeserialize(bad));
  }
});
