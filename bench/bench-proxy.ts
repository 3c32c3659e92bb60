// The proxy as the latency benchmarks run it: the test engine with the default manifests, audit
// lines written as in production (to /dev/null), no default metrics, and a 1 KB-JSON Mask route.

import type { ProxyConfig, ProxyRoute } from '../src/config/types.ts';
import type { RunningProxy } from '../src/proxy/index.ts';

/** A route that masks the customer manifest's fields in JSON POSTed under /protect/. */
export function maskRoute(name: string, host: string, port: number): ProxyRoute {
  return {
    name,
    match: { host, port, methods: ['POST'], path: '/protect/**', contentType: 'application/json' },
    request: { manifest: 'customer', jobType: 'Mask' },
    onError: 'reject',
    maxBodyBytes: 1024 * 1024,
  };
}

export async function startBenchProxy(config: Omit<ProxyConfig, 'enabled' | 'listen' | 'connectTimeoutMs' | 'responseTimeoutMs'>, dataDir: string): Promise<RunningProxy> {
  const { startProxy } = await import('../src/proxy/index.ts');
  const { createLogger } = await import('../src/core/logger.ts');
  const { Metrics } = await import('../src/core/metrics.ts');
  const { testEngine } = await import('../test/helpers/engine.ts');
  const { pino } = await import('pino');
  return startProxy({
    config: { enabled: true, listen: { host: '127.0.0.1', port: 0 }, connectTimeoutMs: 5000, responseTimeoutMs: 30_000, ...config },
    dataDir,
    engine: testEngine(),
    logger: createLogger({ level: 'info', destination: pino.destination({ dest: '/dev/null', sync: false }) }),
    metrics: new Metrics({ collectDefaults: false }),
  });
}
