// Starts the real gRPC door for tests: real engine over the default manifests, real identity with
// the demo clients, listener on 127.0.0.1:0, every log line captured for leak checks.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../../src/core/logger.ts';
import { Metrics } from '../../../src/core/metrics.ts';
import type { GatewayConfig, GrpcConfig, IdentityConfig, LimitsConfig } from '../../../src/config/types.ts';
import type { Engine } from '../../../src/engine/types.ts';
import type { Overload } from '../../../src/core/overload.ts';
import { createIdentity } from '../../../src/identity/identity.ts';
import type { Identity } from '../../../src/identity/types.ts';
import { startGrpcServer } from '../../../src/transport/grpc/index.ts';
import { testEngine } from '../../helpers/engine.ts';

export { API_KEY, CLIENTS } from '../../helpers/identity.ts';
import { API_KEY, CLIENTS } from '../../helpers/identity.ts';
import { testGatewayConfig } from '../../helpers/gateway-config.ts';

export function gatewayConfig(dataDir: string, grpc: Partial<GrpcConfig> = {}, limits: Partial<LimitsConfig> = {}): GatewayConfig {
  return testGatewayConfig(dataDir, { grpc, limits });
}

export interface GrpcTestGateway {
  readonly port: number;
  readonly logs: string[];
  readonly identity: Identity;
  readonly metrics: Metrics;
  /** Health reports SERVING while true. */
  ready: boolean;
  token(client: keyof typeof CLIENTS): Promise<string>;
  close(): Promise<void>;
}

export interface GrpcTestGatewayOptions {
  readonly grpc?: Partial<GrpcConfig>;
  readonly limits?: Partial<LimitsConfig>;
  readonly engine?: Engine;
  readonly overload?: Overload;
}

export async function startGrpcTestGateway(options: GrpcTestGatewayOptions = {}): Promise<GrpcTestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'dpg-grpc-'));
  const logs: string[] = [];
  const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void logs.push(line) } });
  const config = gatewayConfig(dataDir, options.grpc, options.limits);
  const metrics = new Metrics({ collectDefaults: false });
  const identity = await createIdentity(config.identity, { logger, nodeEnv: 'test' });
  const tokens = new Map<string, string>();
  const state = { ready: true };
  const server = await startGrpcServer({
    config,
    engine: options.engine ?? testEngine(),
    identity,
    logger,
    metrics,
    isReady: () => state.ready,
    overload: options.overload,
  });
  return {
    port: server.address.port,
    logs,
    identity,
    metrics,
    get ready() {
      return state.ready;
    },
    set ready(value: boolean) {
      state.ready = value;
    },
    async token(name) {
      const cached = tokens.get(name);
      if (cached !== undefined) return cached;
      const c = CLIENTS[name];
      const res = await identity.issueToken({
        apiKey: API_KEY,
        authorization: undefined,
        form: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.id, client_secret: c.secret }),
      });
      if (res.status !== 200) throw new Error(`token request for ${name} failed: ${res.status}`);
      tokens.set(name, res.body.access_token);
      return res.body.access_token;
    },
    async close() {
      await server.close(500);
      await identity.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
