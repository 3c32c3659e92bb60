// A plain gRPC client for the tests: built from proto/gateway.proto with proto-loader, exactly as a
// third party would, importing nothing of the server.

import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';

export const PROTO_DIR = fileURLToPath(new URL('../../../proto/', import.meta.url));

const definition = loader.loadSync(['gateway.proto', 'grpc/health/v1/health.proto'], {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
});
const root = grpc.loadPackageDefinition(definition) as any;
export const ProtectServiceClient: typeof grpc.Client = root.com.vendor.gateway.ProtectService;
export const HealthClient: typeof grpc.Client = root.grpc.health.v1.Health;
/** Serialisers of the contract's messages, to check the server's wire codec against protobufjs. */
export const protectValuesMethod = (ProtectServiceClient as unknown as { service: grpc.ServiceDefinition }).service.ProtectValues;

export interface Cell {
  string_value?: string;
}
export interface Row {
  columns: Cell[];
}
export interface ProtectValuesRequest {
  request_id?: string;
  job_config?: Record<string, unknown>;
  labels?: string[];
  rows?: Row[];
}

export interface CallResult {
  readonly rows: string[][];
  readonly trailers: Record<string, string>;
}

export interface CallFailure {
  readonly code: number;
  readonly details: string;
  readonly trailers: Record<string, string>;
}

export function toRows(values: readonly (readonly string[])[]): Row[] {
  return values.map((r) => ({ columns: r.map((v) => ({ string_value: v })) }));
}

function flat(md: grpc.Metadata | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (md === undefined) return out;
  for (const [k, v] of Object.entries(md.getMap())) out[k] = String(v);
  return out;
}

export function createClient(port: number, credentials = grpc.credentials.createInsecure(), options: grpc.ClientOptions = {}): grpc.Client {
  return new ProtectServiceClient(`127.0.0.1:${port}`, credentials, {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    'grpc.max_send_message_length': 64 * 1024 * 1024,
    ...options,
  });
}

/**
 * Calls ProtectValues; resolves with rows (string_value per cell, '' when unset) and trailers, or
 * rejects with a CallFailure.
 */
export function protectValues(client: grpc.Client, request: ProtectValuesRequest, token?: string, extra: Record<string, string> = {}): Promise<CallResult> {
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('authorization', `Bearer ${token}`);
  for (const [k, v] of Object.entries(extra)) md.set(k, v);
  return new Promise((resolve, reject) => {
    // grpc-js runs the callback before it emits 'status' (which carries the trailers): settle on 'status'.
    let outcome: { err: grpc.ServiceError | null; res: { rows: Row[] } | undefined } | undefined;
    const call = (client as unknown as Record<string, Function>).ProtectValues.call(
      client,
      request,
      md,
      (err: grpc.ServiceError | null, res: { rows: Row[] } | undefined) => {
        outcome = { err, res };
      },
    ) as grpc.ClientUnaryCall;
    call.on('status', (s: grpc.StatusObject) => {
      setImmediate(() => {
        const trailers = flat(s.metadata);
        if (outcome === undefined || outcome.err !== null || outcome.res === undefined) {
          reject({ code: s.code, details: s.details, trailers } satisfies CallFailure);
          return;
        }
        resolve({ rows: outcome.res.rows.map((r) => r.columns.map((c) => c.string_value ?? '')), trailers });
      });
    });
  });
}

/** Expects a failure; returns it (fails the test if the call succeeded). */
export async function expectFailure(promise: Promise<CallResult>): Promise<CallFailure> {
  try {
    await promise;
  } catch (failure) {
    return failure as CallFailure;
  }
  throw new Error('expected the call to fail');
}

export function healthCheck(port: number, service = ''): Promise<string> {
  const client = new HealthClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    (client as unknown as Record<string, Function>).Check.call(client, { service }, (err: grpc.ServiceError | null, res: { status: string }) => {
      client.close();
      if (err) reject(err);
      else resolve(res.status);
    });
  });
}
