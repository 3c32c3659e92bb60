// Fixtures for the transparent listener: an upstream PKI naming the hosts a test needs, and a
// proxy started with the transparent listener on, whose "original destination" is whatever the test
// says the next connection was going to (no kernel redirect needed on loopback).

import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { ProxyRoute, TransparentConfig } from '../../../src/config/types.ts';
import { createLogger } from '../../../src/core/logger.ts';
import { Metrics } from '../../../src/core/metrics.ts';
import { startProxy, type ProxyDeps, type RunningProxy } from '../../../src/proxy/index.ts';
import type { OriginalDestination } from '../../../src/core/original-destination.ts';
import { testEngine } from '../../helpers/engine.ts';
import { proxyConfig, startUpstream, tempDir, upstreamPki, type TestPki, type Upstream } from '../helpers.ts';

/** A recording echo upstream on several loopback addresses at one port. */
export function startUpstreamOn(addresses: readonly string[], options: { tls?: TestPki } = {}): Promise<Upstream> {
  return startUpstream({ ...options, hosts: addresses });
}

/** An upstream CA (not the gateway's) and one server certificate for every name and address given. */
export const namedPki = (dir: string, names: readonly string[]): TestPki => upstreamPki(dir, names);

export function transparentConfig(overrides: Partial<TransparentConfig> = {}): TransparentConfig {
  return {
    listen: { host: '127.0.0.1', port: 0 },
    ipv6: false,
    peekTimeoutMs: 200,
    encryptedClientHello: 'refuse',
    inspect: 'routed',
    ...overrides,
  };
}

export interface TransparentProxy {
  readonly proxy: RunningProxy;
  /** Port of the transparent listener. */
  readonly port: number;
  readonly caPem: string;
  /** The next accepted connection was "redirected" from this destination (undefined: not redirected). */
  redirectNext(dst: OriginalDestination | undefined): void;
  logText(): string;
  close(): Promise<void>;
}

export async function startTransparentProxy(options: {
  routes: ProxyRoute[];
  hosts?: Record<string, string[]>;
  upstreamCa?: string;
  transparent?: Partial<TransparentConfig>;
  grpcPhases?: ProxyDeps['grpcPhases'];
}): Promise<TransparentProxy> {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString('utf8'));
        cb();
      },
    }),
  });
  const queue: (OriginalDestination | undefined)[] = [];
  const hosts = options.hosts ?? {};
  const proxy = await startProxy({
    config: proxyConfig({ routes: options.routes, transparent: transparentConfig(options.transparent), ...(options.upstreamCa ? { upstreamCa: options.upstreamCa } : {}) }),
    dataDir: tempDir(),
    engine: testEngine(),
    logger,
    metrics: new Metrics({ collectDefaults: false }),
    resolveHost: async (name) => {
      const found = hosts[name];
      if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return found;
    },
    transparentOverrides: { originalDestination: () => queue.shift() },
    ...(options.grpcPhases ? { grpcPhases: options.grpcPhases } : {}),
  });
  return {
    proxy,
    port: proxy.transparent[0].port,
    caPem: proxy.caPem,
    redirectNext: (dst) => queue.push(dst),
    logText: () => lines.join(''),
    close: () => proxy.close(500),
  };
}
