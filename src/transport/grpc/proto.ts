// The service definitions the gRPC server registers, for the contract in proto/gateway.proto and
// proto/grpc/health/v1/health.proto: method paths and shapes as the .proto files declare them, with
// the hand-written codecs of wire.ts (ProtectValues) and health-wire.ts (Health). No .proto file is
// parsed at start, so @grpc/proto-loader and protobufjs are not loaded (docs/performance.md); a test
// checks these definitions against proto-loader reading the .proto files.

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import {
  decodeHealthCheckRequest,
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  encodeHealthCheckResponse,
  type HealthCheckRequest,
  type HealthCheckResponse,
} from './health-wire.ts';
import {
  decodeProtectValuesRequest,
  encodeProtectValuesResponse,
  type DecodeOptions,
  type DecodedProtectValuesRequest,
} from './wire.ts';

/**
 * The package's proto/ directory: the import path for gateway.proto and grpc/health/v1/health.proto.
 * Found by walking up from this module, which sits in src/transport/grpc/ when run from source and
 * in a dist/ chunk when compiled.
 */
export const PROTO_DIR = findProtoDir(dirname(fileURLToPath(import.meta.url)));

function findProtoDir(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'proto', 'gateway.proto'))) return join(dir, 'proto') + '/';
    if (dirname(dir) === dir) throw new Error(`proto/gateway.proto not found above ${from}`);
  }
}

export const PROTECT_SERVICE_NAME = 'com.vendor.gateway.ProtectService';
export const HEALTH_SERVICE_NAME = 'grpc.health.v1.Health';

/** What ProtectValues hands the handler and takes back. */
export interface ProtectValuesReply {
  readonly rows: readonly (readonly string[])[];
}

/** The server side only ever decodes requests and encodes replies of ProtectValues. */
function serverOnly(what: string): never {
  throw new Error(`ProtectValues ${what} is not used by the server`);
}

/**
 * ProtectService with the row codec: the request decodes straight to string[][] (never throwing —
 * a malformed message is flagged for the handler) and the reply encodes from string[][].
 */
export function protectServiceDefinition(options: DecodeOptions): ServiceDefinition {
  const method: MethodDefinition<unknown, ProtectValuesReply> = {
    path: `/${PROTECT_SERVICE_NAME}/ProtectValues`,
    originalName: 'protectValues', // as proto-loader names it (client method alias)
    requestStream: false,
    responseStream: false,
    requestSerialize: () => serverOnly('request encoding'),
    requestDeserialize: (bytes: Buffer): DecodedProtectValuesRequest => ({ ...decodeProtectValuesRequest(bytes, options), wireBytes: bytes.length }),
    responseSerialize: (reply: ProtectValuesReply): Buffer => encodeProtectValuesResponse(reply.rows),
    responseDeserialize: () => serverOnly('response decoding'),
  };
  return { ProtectValues: method };
}

export function healthServiceDefinition(): ServiceDefinition {
  const method = (name: 'Check' | 'Watch', responseStream: boolean): MethodDefinition<HealthCheckRequest, HealthCheckResponse> => ({
    path: `/${HEALTH_SERVICE_NAME}/${name}`,
    originalName: name.toLowerCase(),
    requestStream: false,
    responseStream,
    requestSerialize: encodeHealthCheckRequest,
    requestDeserialize: decodeHealthCheckRequest,
    responseSerialize: encodeHealthCheckResponse,
    responseDeserialize: decodeHealthCheckResponse,
  });
  return { Check: method('Check', false), Watch: method('Watch', true) };
}
