// Loads proto/gateway.proto and the grpc.health.v1 definition once, and builds the service
// definitions the server registers; ProtectValues gets the hand-written codec of wire.ts.

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPackageDefinition, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
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

/** keepCase: JobConfig fields keep their snake_case names, 1:1 with the contract. */
export const PROTO_LOADER_OPTIONS: Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

export const PROTECT_SERVICE_NAME = 'com.vendor.gateway.ProtectService';
export const HEALTH_SERVICE_NAME = 'grpc.health.v1.Health';

/** What ProtectValues hands the handler and takes back. */
export interface ProtectValuesReply {
  readonly rows: readonly (readonly string[])[];
}

interface Loaded {
  readonly protect: ServiceDefinition;
  readonly health: ServiceDefinition;
}

let loaded: Loaded | undefined;

function load(): Loaded {
  if (loaded) return loaded;
  const definition = loadSync(['gateway.proto', 'grpc/health/v1/health.proto'], PROTO_LOADER_OPTIONS);
  const root = loadPackageDefinition(definition) as unknown as {
    com: { vendor: { gateway: { ProtectService: { service: ServiceDefinition } } } };
    grpc: { health: { v1: { Health: { service: ServiceDefinition } } } };
  };
  loaded = { protect: root.com.vendor.gateway.ProtectService.service, health: root.grpc.health.v1.Health.service };
  return loaded;
}

/**
 * ProtectService with the method's (de)serialisers swapped for the row codec: the request decodes
 * straight to string[][] (never throwing — a malformed message is flagged for the handler) and the
 * reply encodes from string[][].
 */
export function protectServiceDefinition(options: DecodeOptions): ServiceDefinition {
  const base = load().protect;
  const method = base.ProtectValues;
  return {
    ProtectValues: {
      ...method,
      requestDeserialize: (bytes: Buffer): DecodedProtectValuesRequest => decodeProtectValuesRequest(bytes, options),
      responseSerialize: (reply: ProtectValuesReply): Buffer => encodeProtectValuesResponse(reply.rows),
    },
  };
}

export function healthServiceDefinition(): ServiceDefinition {
  return load().health;
}
