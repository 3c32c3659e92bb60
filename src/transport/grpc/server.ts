// The gRPC door: ProtectService and grpc.health.v1.Health on one listener, plaintext by default,
// TLS when config.grpc.tls names a certificate and key.

import { readFile } from 'node:fs/promises';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { Overload } from '../../core/overload.ts';
import type { GatewayConfig, TlsFiles } from '../../config/types.ts';
import type { Engine } from '../../engine/types.ts';
import type { Identity } from '../../identity/types.ts';
import { widenReceiveWindows } from './flow-control.ts';
import { createHealthService } from './health.ts';
import { healthServiceDefinition, protectServiceDefinition } from './proto.ts';
import { createProtectValuesHandler } from './protect-values.ts';
import type { RunningServer } from './running-server.ts';

export interface GrpcServerDeps {
  readonly config: GatewayConfig;
  readonly engine: Engine;
  readonly identity: Identity;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Health reports SERVING only while this is true. */
  readonly isReady: () => boolean;
  /** Overload shedding (docs/operations.md#overload); absent: none. */
  readonly overload?: Overload;
}

const DEFAULT_GRACE_MS = 10_000;

export async function startGrpcServer(deps: GrpcServerDeps): Promise<RunningServer> {
  const { grpc: grpcConfig, limits } = deps.config;
  const credentials = grpcConfig.tls ? await tlsCredentials(grpcConfig.tls) : ServerCredentials.createInsecure();

  const server = new Server({
    'grpc.max_receive_message_length': grpcConfig.maxMessageBytes,
    'grpc.max_send_message_length': grpcConfig.maxMessageBytes,
  });
  server.addService(protectServiceDefinition({ maxRows: limits.maxRows }), {
    ProtectValues: createProtectValuesHandler({
      engine: deps.engine,
      identity: deps.identity,
      logger: deps.logger,
      metrics: deps.metrics,
      limits,
      gate: deps.overload?.gate('grpc'),
      retryAfterSeconds: deps.overload?.config.retryAfterSeconds,
    }),
  });
  const health = createHealthService(deps.isReady);
  server.addService(healthServiceDefinition(), health.implementation);

  const { host } = grpcConfig.listen;
  const port = await bind(server, host, grpcConfig.listen.port, credentials);
  if (!widenReceiveWindows(server, grpcConfig.maxMessageBytes)) {
    deps.logger.debug({ door: 'grpc' }, 'HTTP/2 window tuning unavailable with this grpc-js version; using defaults');
  }
  deps.logger.info({ door: 'grpc', host, port, tls: grpcConfig.tls !== undefined }, 'gRPC API listening');

  let closing: Promise<void> | undefined;
  return {
    address: { host, port },
    close(graceMs = deps.config.http?.shutdownGraceMs ?? DEFAULT_GRACE_MS): Promise<void> {
      closing ??= shutdown(server, graceMs, () => health.shutdown());
      return closing;
    },
  };
}

/** ca, when configured, makes the listener ask for and verify client certificates (mutual TLS). */
async function tlsCredentials(tls: TlsFiles): Promise<ServerCredentials> {
  const [cert, key, ca] = await Promise.all([
    readPem(tls.cert, 'certificate'),
    readPem(tls.key, 'private key'),
    tls.ca === undefined ? Promise.resolve(null) : readPem(tls.ca, 'client CA'),
  ]);
  return ServerCredentials.createSsl(ca, [{ cert_chain: cert, private_key: key }], ca !== null);
}

async function readPem(file: string, what: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw new Error(`grpc.tls: cannot read the ${what} file ${file}`, { cause: err });
  }
}

function bind(server: Server, host: string, port: number, credentials: ServerCredentials): Promise<number> {
  const address = host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, boundPort) => {
      if (err) reject(new Error(`gRPC API cannot listen on ${address}: ${err.message}`, { cause: err }));
      else resolve(boundPort);
    });
  });
}

/** Stops new calls, lets running ones finish for up to graceMs, then cuts whatever is left. */
function shutdown(server: Server, graceMs: number, beforeShutdown: () => void): Promise<void> {
  beforeShutdown();
  return new Promise((resolve) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      server.forceShutdown();
      finish();
    }, graceMs);
    timer.unref();
    server.tryShutdown(() => finish());
  });
}
