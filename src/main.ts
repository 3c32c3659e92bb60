// Wires config, keyring, engine, identity, metrics and the doors together. Nothing imports this
// but the CLI; the doors never import each other and meet only here.

import { watch, type FSWatcher } from 'node:fs';
import { ConfigError } from './core/errors.ts';
import type { Logger } from './core/logger.ts';
import { Metrics } from './core/metrics.ts';
import type { GatewayConfig } from './config/types.ts';
import { buildEngine, checkConfigReferences } from './engine/build.ts';
import { createIdentity } from './identity/identity.ts';
import { startHttpServer } from './transport/http/server.ts';
import { startGrpcServer } from './transport/grpc/index.ts';
import { startProxy } from './proxy/index.ts';

export interface Gateway {
  readonly addresses: Record<string, { host: string; port: number }>;
  reload(): void;
  close(): Promise<void>;
}

/** Starts every listener of the config (each door logs its own address). */
export async function startGateway(config: GatewayConfig, deps: { logger: Logger }): Promise<Gateway> {
  const { logger } = deps;
  const { engine, keyring } = buildEngine(config, logger);
  for (const warning of keyring.retiredNowWarnings(new Date())) logger.warn(warning);
  const refs = checkConfigReferences(config, engine);
  if (refs.length > 0) throw new ConfigError(refs);
  const metrics = new Metrics();
  const identity = await createIdentity(config.identity, { logger, nodeEnv: process.env.NODE_ENV });
  let ready = false;
  // The proxy can be unable to take work while the rest is fine (at its connection cap, out of descriptors).
  let proxyReady: () => boolean = () => true;
  const isReady = () => ready && proxyReady();

  const proxy = config.proxy.enabled
    ? await startProxy({ config: config.proxy, dataDir: config.dataDir, engine, logger, metrics })
    : undefined;
  if (proxy) proxyReady = () => proxy.ready();
  const http = await startHttpServer({ config, engine, identity, logger, metrics, isReady, proxyCaPem: () => proxy?.caPem });
  const grpc = await startGrpcServer({ config, engine, identity, logger, metrics, isReady });
  ready = true;

  const addresses: Record<string, { host: string; port: number }> = { http: http.address, grpc: grpc.address };
  if (proxy) {
    addresses.proxy = proxy.address;
    proxy.reverse.forEach((r: { host: string; port: number }, i: number) => (addresses[`reverse${i}`] = { host: r.host, port: r.port }));
  }
  logger.info({ manifests: engine.manifestNames() }, 'ready');

  const reload = () => {
    const problems = engine.reload();
    if (problems.length > 0) {
      logger.error({ problems: problems.length, files: [...new Set(problems.map((p) => p.file))] }, 'manifest reload refused; previous manifests stay in force');
    } else logger.info({ manifests: engine.manifestNames() }, 'manifests reloaded');
  };
  const watcher = watchManifests(config.manifests, reload, logger);

  return {
    addresses,
    reload,
    async close() {
      ready = false;
      watcher?.close();
      const grace = config.http.shutdownGraceMs;
      await Promise.all([http.close(grace), grpc.close(grace), proxy?.close(grace)]);
      await identity.close();
    },
  };
}

/** Reloads manifests shortly after files in their directory change (editors write in bursts). */
function watchManifests(dir: string, reload: () => void, logger: Logger): FSWatcher | undefined {
  let timer: NodeJS.Timeout | undefined;
  try {
    const watcher = watch(dir, { persistent: false }, () => {
      clearTimeout(timer);
      timer = setTimeout(reload, 250);
      timer.unref();
    });
    watcher.on('error', () => logger.warn('manifest directory watch stopped; reload with SIGHUP'));
    return watcher;
  } catch {
    logger.warn('cannot watch the manifest directory; reload with SIGHUP');
    return undefined;
  }
}
