// What a reload cannot change in a running process: listening sockets, the doors' own settings, the
// identity service, logging and the data directory. A new config's values there are logged as
// needing a restart and replaced by the running ones, so the generation's config is what runs.

import { isDeepStrictEqual } from 'node:util';
import type { GatewayConfig, ProxyConfig } from '../config/types.ts';

/** Top-level sections read once at start (docs/operations.md, "Reload and key rotation"). */
const RESTART_SECTIONS = ['dataDir', 'http', 'grpc', 'identity', 'admin', 'logging', 'limits'] as const;
/** proxy settings bound to its listeners and connection handling. */
const RESTART_PROXY_FIELDS = ['enabled', 'listen', 'forward', 'transparent', 'maxConnections', 'idleTimeoutMs'] as const;

export interface EffectiveConfig {
  /** The new config with every restart-only setting taken from the running one. */
  readonly config: GatewayConfig;
  /** Dotted paths whose new value waits for a restart (empty when none changed). */
  readonly restartNeeded: readonly string[];
}

export function effectiveConfig(running: GatewayConfig, next: GatewayConfig): EffectiveConfig {
  const restartNeeded: string[] = [];
  const kept: Record<string, unknown> = {};
  for (const key of RESTART_SECTIONS) {
    if (!isDeepStrictEqual(running[key], next[key])) restartNeeded.push(key);
    kept[key] = running[key];
  }
  const proxy: Record<string, unknown> = { ...next.proxy };
  for (const key of RESTART_PROXY_FIELDS) {
    if (!isDeepStrictEqual(running.proxy[key], next.proxy[key])) restartNeeded.push(`proxy.${key}`);
    if (running.proxy[key] === undefined) delete proxy[key];
    else proxy[key] = running.proxy[key];
  }
  const config = { ...next, ...kept, proxy: proxy as unknown as ProxyConfig } as GatewayConfig;
  if (!running.admin) delete (config as { admin?: unknown }).admin;
  return { config, restartNeeded };
}
