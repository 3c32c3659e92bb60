// Wires config, keyring, engine, identity, metrics and the doors together. Nothing imports this
// but the CLI; the doors never import each other and meet only here.

import type { ConfigProblem } from './core/errors.ts';
import type { Logger } from './core/logger.ts';
import { Metrics } from './core/metrics.ts';
import { parseJobType } from './core/types.ts';
import type { GatewayConfig } from './config/types.ts';
import { ensureDevKeyring, loadKeyringFile, loadKeyringFromEnv, type Keyring } from './crypto/keyring.ts';
import { createEngine, type ProtectionEngine } from './engine/engine.ts';
import { createIdentity } from './identity/identity.ts';
import { startHttpServer } from './transport/http/server.ts';
import { startGrpcServer } from './transport/grpc/server.ts';
import { startProxy } from './proxy/index.ts';

export function loadKeyring(config: GatewayConfig): Keyring {
  const keys = config.keys;
  if (keys.source === 'file') return loadKeyringFile(keys.file);
  if (keys.source === 'env') return loadKeyringFromEnv(keys.env);
  return loadKeyringFile(ensureDevKeyring(config.dataDir));
}

export function buildEngine(config: GatewayConfig, logger?: Logger): { engine: ProtectionEngine; keyring: Keyring } {
  const keyring = loadKeyring(config);
  const engine = createEngine({
    manifestsDir: config.manifests,
    keyring,
    limits: config.limits,
    ...(logger ? { logger } : {}),
  });
  return { engine, keyring };
}

/** Cross-checks that need both config and manifests: proxy routes must name real manifests and job types. */
export function checkConfigReferences(config: GatewayConfig, engine: ProtectionEngine): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const route of config.proxy.routes) {
    for (const [phaseName, phase] of [
      ['request', route.request],
      ['response', route.response],
    ] as const) {
      if (!phase) continue;
      const where = `proxy.routes.${route.name}.${phaseName}`;
      const manifest = engine.manifest(phase.manifest);
      const jobType = parseJobType(phase.jobType);
      if (!manifest) problems.push({ file: config.file, path: where, message: `manifest ${phase.manifest} does not exist` });
      if (!jobType) problems.push({ file: config.file, path: where, message: `unknown job type ${phase.jobType}` });
      else if (manifest && !manifest.jobTypes.has(jobType)) {
        problems.push({ file: config.file, path: where, message: `manifest ${phase.manifest} defines no ${jobType} rules` });
      }
    }
  }
  return problems;
}

export interface Gateway {
  readonly addresses: Record<string, { host: string; port: number }>;
  reload(): void;
  close(): Promise<void>;
}

/** Starts every listener of the config; logs one line per listener. */
export async function startGateway(config: GatewayConfig, deps: { logger: Logger }): Promise<Gateway> {
  const { logger } = deps;
  const { engine } = buildEngine(config, logger);
  const refs = checkConfigReferences(config, engine);
  if (refs.length > 0) {
    const { ConfigError } = await import('./core/errors.ts');
    throw new ConfigError(refs);
  }
  const metrics = new Metrics();
  const identity = await createIdentity(config.identity, { logger, nodeEnv: process.env.NODE_ENV });
  let ready = false;
  const isReady = () => ready;

  const proxy = config.proxy.enabled
    ? await startProxy({ config: config.proxy, dataDir: config.dataDir, engine, logger, metrics })
    : undefined;
  const http = await startHttpServer({ config, engine, identity, logger, metrics, isReady, proxyCaPem: () => proxy?.caPem });
  const grpc = await startGrpcServer({ config, engine, identity, logger, metrics, isReady });
  ready = true;

  const addresses: Record<string, { host: string; port: number }> = { http: http.address, grpc: grpc.address };
  if (proxy) {
    addresses.proxy = proxy.address;
    proxy.reverse.forEach((r: { host: string; port: number }, i: number) => (addresses[`reverse${i}`] = { host: r.host, port: r.port }));
  }
  for (const [name, a] of Object.entries(addresses)) logger.info({ listener: name, host: a.host, port: a.port }, 'listening');
  logger.info({ manifests: engine.manifestNames() }, 'ready');

  return {
    addresses,
    reload() {
      const problems = engine.reload();
      if (problems.length > 0) logger.error({ problems: problems.length, files: [...new Set(problems.map((p) => p.file))] }, 'manifest reload refused; previous manifests stay in force');
      else logger.info({ manifests: engine.manifestNames() }, 'manifests reloaded');
    },
    async close() {
      ready = false;
      const grace = config.http.shutdownGraceMs;
      await Promise.all([http.close(grace), grpc.close(grace), proxy?.close(grace)]);
      await identity.close();
    },
  };
}
