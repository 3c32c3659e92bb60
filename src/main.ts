// Wires config, keyring, engine, identity, metrics and the doors together. Nothing imports this
// but the CLI; the doors never import each other and meet only here.

import { readFileSync } from 'node:fs';
import { ConfigError, StartupError } from './core/errors.ts';
import type { Logger } from './core/logger.ts';
import type { Metrics } from './core/metrics.ts';
import { readTally } from './engine/tally.ts';
import { workerPoolStats } from './engine/worker-pool.ts';
import type { GatewayConfig, ListenAddress } from './config/types.ts';
import { buildEngine, checkConfigReferences } from './engine/build.ts';
import { fingerprintKeyring } from './crypto/keyring-fingerprint.ts';
import type { Keyring } from './crypto/keyring.ts';
import { loadConfig } from './config/load.ts';
import type { RunningProxy } from './proxy/index.ts';
import { DEFAULT_OVERLOAD, Overload } from './core/overload.ts';
import { ConfigGeneration } from './reload/generation.ts';
import { LiveEngine } from './reload/live-engine.ts';
import { startReloader, type Reloader } from './reload/reloader.ts';

// Each door, the identity service and the metrics registry are imported only when the config turns
// them on (dynamic import): the gRPC stack, jose, prom-client and undici cost memory and start-up
// time that a sidecar running only the proxy should not pay (docs/performance.md, footprint).

export interface Gateway {
  readonly addresses: Record<string, { host: string; port: number }>;
  /** Loads the configuration again (SIGHUP); resolves true when the new one took effect. */
  reload(): Promise<boolean>;
  /** The configuration generation in force (1 at start). */
  generation(): number;
  close(): Promise<void>;
}

/** Starts every listener the config turns on (each door logs its own address). */
export async function startGateway(config: GatewayConfig, deps: { logger: Logger }): Promise<Gateway> {
  const { logger } = deps;
  const httpOn = config.http.enabled !== false;
  const grpcOn = config.grpc.enabled !== false;
  logger.info({ config: config.file, dataDir: config.dataDir, codeCache: codeCacheState() }, 'starting');
  const { engine, keyring } = buildEngine(config, logger, {
    onKeyringCreated: (path) => logger.warn({ path }, 'generated a development keyring (for development only; see docs/keys.md)'),
  });
  for (const warning of keyring.retiredNowWarnings(new Date())) logger.warn(warning);
  const refs = checkConfigReferences(config, engine);
  if (refs.length > 0) throw new ConfigError(refs);
  // Replicas must share one keyring: the fingerprint lets operators compare them (never key bytes).
  let keyringId = fingerprintKeyring(keyring);
  logger.info({ keySource: config.keys.source, fingerprint: keyringId.fingerprint, keyVersions: keyringId.versions }, 'keyring');
  // Metrics are served on the HTTP API and the admin listener; without either nothing would read them.
  const metrics = httpOn || config.admin ? new (await import('./core/metrics.ts')).Metrics() : unreadMetrics();
  metrics.setKeyring(keyringId);
  // Values by technique and detections by kind, from this thread and what the workers sent back.
  metrics.trackEngine({ tally: readTally, workers: workerPoolStats });
  // Certificate expiry, read on each scrape (a certificate may be replaced while running).
  if (config.proxy.enabled) metrics.watchCertificate('proxy-ca', () => proxy?.caPem);
  const grpcTls = config.grpc.tls;
  if (grpcOn && grpcTls) metrics.watchCertificate('grpc-serving', () => readFileSync(grpcTls.cert, 'utf8'));
  // Every door runs a request under the generation in force when it started (src/reload/).
  const first = new ConfigGeneration(1, config, engine);
  let reloader: Reloader | undefined;
  const current = (): ConfigGeneration => reloader?.current() ?? first;
  const liveEngine = new LiveEngine(current);
  // Tokens are issued on HTTP and checked by HTTP and gRPC: with both off there is nothing to identify.
  const identityStarting =
    httpOn || grpcOn
      ? import('./identity/identity.ts').then((m) => m.createIdentity(config.identity, { logger, nodeEnv: process.env.NODE_ENV }))
      : Promise.resolve(undefined);
  let ready = false;
  const overload = startOverload(config, metrics, logger);
  // The proxy can be unable to take work while the rest is fine (at its connection cap, out of descriptors);
  // a door at an overload bound cannot either, while health stays green (docs/operations.md#overload).
  let proxy: RunningProxy | undefined;
  const isReady = () => ready && (proxy?.ready() ?? true) && overload.saturated() === undefined;
  const needIdentity = async () => (await identityStarting)!;

  // The doors start side by side (their file reads, key loading and binds overlap); if one fails,
  // those that started are closed again and the first failure, naming its door, is thrown.
  const starting: Promise<Closable>[] = [];
  if (config.proxy.enabled) {
    starting.push(
      door('egress proxy', config.proxy.listen, async () => {
        proxy = await (await import('./proxy/index.ts')).startProxy({
          config: config.proxy,
          dataDir: config.dataDir,
          engine,
          logger,
          metrics,
          isReady,
          hold: () => first.enter(),
          overload,
        });
        return proxy;
      }),
    );
  }
  const http = httpOn
    ? door('HTTP API', config.http.listen, async () =>
        (await import('./transport/http/server.ts')).startHttpServer({ config, engine: liveEngine, identity: await needIdentity(), logger, metrics, isReady, proxyCaPem: () => proxy?.caPem, overload }),
      )
    : undefined;
  const grpc = grpcOn
    ? door('gRPC API', config.grpc.listen, async () =>
        (await import('./transport/grpc/index.ts')).startGrpcServer({ config, engine: liveEngine, identity: await needIdentity(), logger, metrics, isReady, overload }),
      )
    : undefined;
  if (http) starting.push(http);
  if (grpc) starting.push(grpc);
  const admin = config.admin
    ? door('admin listener', config.admin.listen, async () =>
        (await import('./transport/http/admin-server.ts')).startAdminServer({ listen: config.admin!.listen, metrics, isReady, logger }),
      )
    : undefined;
  if (admin) starting.push(admin);
  const settled = await Promise.allSettled([identityStarting, ...starting]);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    overload.close();
    await Promise.all(settled.map((r) => (r.status === 'fulfilled' && r.value && 'close' in r.value ? r.value.close(0).catch(() => undefined) : undefined)));
    throw failed.reason;
  }
  const identity = await identityStarting;
  const httpServer = http ? await http : undefined;
  const grpcServer = grpc ? await grpc : undefined;
  const adminServer = admin ? await admin : undefined;
  ready = true;

  const addresses: Record<string, { host: string; port: number }> = {};
  if (httpServer) addresses.http = httpServer.address;
  if (grpcServer) addresses.grpc = grpcServer.address;
  if (adminServer) addresses.admin = adminServer.address;
  if (proxy) {
    addresses.proxy = proxy.address;
    proxy.reverse.forEach((r: { host: string; port: number }, i: number) => (addresses[`reverse${i}`] = { host: r.host, port: r.port }));
    proxy.transparent.forEach((t, i) => (addresses[i === 0 ? 'transparent' : `transparent${i}`] = t));
  }
  logger.info({ manifests: engine.manifestNames() }, 'ready');

  reloader = startReloader({
    first,
    load: () => loadConfig({ file: config.file }),
    build: (next) => {
      const built = buildEngine(next, logger);
      const problems = checkConfigReferences(next, built.engine);
      if (problems.length > 0) {
        void built.engine.close();
        throw new ConfigError(problems);
      }
      return built;
    },
    onKeyring: (next: Keyring) => {
      const id = fingerprintKeyring(next);
      if (id.fingerprint === keyringId.fingerprint) return;
      keyringId = id;
      metrics.setKeyring(id);
      logger.info({ keySource: config.keys.source, fingerprint: id.fingerprint, keyVersions: id.versions }, 'keyring changed by reload');
    },
    door: {
      reconfigure: async (g, commit) => {
        if (!proxy) return commit();
        await proxy.reconfigure({ config: g.config.proxy, engine: g.engine, hold: () => g.enter() }, commit);
      },
    },
    logger,
    metrics,
  });
  const reload = (): Promise<boolean> => reloader!.reload('SIGHUP');

  return {
    addresses,
    reload,
    generation: () => current().id,
    async close() {
      ready = false;
      reloader?.close();
      const grace = config.http.shutdownGraceMs;
      await Promise.all([httpServer?.close(grace), grpcServer?.close(grace), proxy?.close(grace)]);
      // After the doors drained: no request waits on a protection worker any more.
      await current().engine.close();
      // Last: probes and scrapes keep an answer (not ready) while the doors drain.
      await adminServer?.close();
      await identity?.close();
      overload.close();
    },
  };
}

/** At most one "shedding" warning per door in this window: under overload a line per request would add to it. */
const SHED_WARN_EVERY_MS = 10_000;

/** The doors' overload gates, counted in metrics and logged at most once per door per window. */
function startOverload(config: GatewayConfig, metrics: Metrics, logger: Logger): Overload {
  const warnedAt = new Map<string, number>();
  const overload = new Overload(config.limits.overload ?? DEFAULT_OVERLOAD, {
    onShed: (door, reason) => {
      metrics.observeShed(door, reason);
      const now = Date.now();
      if (now - (warnedAt.get(door) ?? -Infinity) < SHED_WARN_EVERY_MS) return;
      warnedAt.set(door, now);
      logger.warn({ door, reason }, 'overloaded: shedding new work with 503 and Retry-After (docs/operations.md#overload)');
    },
  });
  metrics.trackOverload(overload);
  return overload;
}

interface Closable {
  close(graceMs?: number): Promise<void>;
}

/** Starts one door; a failure becomes a StartupError naming the door and its address or file. */
async function door<T extends Closable>(name: string, listen: ListenAddress, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    throw startupFailure(name, listen, err);
  }
}

const LISTEN_FAILURES: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'address not available on this machine',
  EACCES: 'permission denied',
};

/** A door that failed to start, as a StartupError naming the door, the address or file, and why. */
function startupFailure(door: string, listen: ListenAddress, err: unknown): Error {
  if (err instanceof StartupError || err instanceof ConfigError) return err;
  // node:http / net errors carry the code and the address; grpc-js wraps its cause.
  const e = (err as { cause?: NodeJS.ErrnoException }).cause && !(err as NodeJS.ErrnoException).code ? (err as { cause: NodeJS.ErrnoException }).cause : (err as NodeJS.ErrnoException);
  const code = e?.code ?? '';
  const address = `${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${listen.port}`;
  if (e && 'path' in e && typeof e.path === 'string') return new StartupError(`${door}: cannot read ${e.path} (${code || 'error'})`, { cause: err });
  if (code in LISTEN_FAILURES && e?.syscall !== 'open') return new StartupError(`${door}: cannot listen on ${address}: ${LISTEN_FAILURES[code]} (${code})`, { cause: err });
  if (/No address added|EADDRINUSE|address already in use/i.test(String((err as Error)?.message))) {
    return new StartupError(`${door}: cannot listen on ${address}: address already in use or not available`, { cause: err });
  }
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * Whether this process started from dist/serve.cjs with V8's code cache (bin/dpg.js): `used`,
 * `rejected` (V8 refused it), `none` (no cache for this build), or `off` (started from the ES
 * module build: DPG_CODE_CACHE=off, the sources, or no dist/serve.cjs).
 */
function codeCacheState(): string {
  const state = (globalThis as Record<symbol, unknown>)[Symbol.for('dpg.codeCache')];
  return typeof state === 'string' ? state : 'off';
}

/** Stands in for the metrics registry when no listener serves /metrics (prom-client is never loaded). */
function unreadMetrics(): Metrics {
  const sink = {
    observeRequest(): void {},
    observeProxy(): void {},
    setKeyring(): void {},
    watchCertificate(): void {},
    trackOverload(): void {},
    trackEngine(): void {},
    observeShed(): void {},
    setConfigGeneration(): void {},
    observeReload(): void {},
    async render() {
      return { contentType: 'text/plain; version=0.0.4', body: '' };
    },
  };
  // Metrics is a class with private fields; the gateway and its doors only call these methods.
  return sink as unknown as Metrics;
}
