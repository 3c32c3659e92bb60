// Loads proto/gateway.proto and the grpc.health.v1 definition once, and builds the service
// definitions the server registers; ProtectValues gets the hand-written codec of wire.ts.

import { fileURLToPath } from 'node:url';
import { loadPackageDefinition, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import {
  decodeProtectValuesRequest,
  encodeProtectValuesResponse,
  type DecodeOptions,
  type DecodedProtectValuesRequest,
} from './wire.ts';

/** The repository's proto/ directory: the import path for gateway.proto and grpc/health/v1/health.proto. */
export const PROTO_DIR = fileURLToPath(new URL('../../../proto/', import.meta.url));

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
