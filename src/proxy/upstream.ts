// The connection pool to upstreams (one undici Agent: keep-alive pools per origin) and how its
// failures read to the app: cannot connect → 502, no timely answer → 504.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { rootCertificates } from 'node:tls';
import type * as Undici from 'undici';
import type { Agent } from 'undici';
import { upstreamTimeout, upstreamUnreachable, type Problem } from './problem.ts';

export interface UpstreamOptions {
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  /** PEM file of extra roots, trusted in addition to Node's bundled roots. */
  readonly upstreamCa?: string;
}

/** The roots for upstream TLS: undefined keeps Node's defaults (bundled roots + NODE_EXTRA_CA_CERTS). */
export function upstreamRoots(upstreamCa: string | undefined): string[] | undefined {
  if (upstreamCa === undefined) return undefined;
  let extra: string;
  try {
    extra = readFileSync(upstreamCa, 'utf8');
  } catch (err) {
    throw new Error(`proxy.upstreamCa ${upstreamCa} could not be read`, { cause: err });
  }
  return [...rootCertificates, extra];
}

/**
 * The upstream pool. undici (~40 ms and several MB to load) is loaded with the first upstream
 * request, not at start: an idle sidecar never pays for it (docs/performance.md, footprint). In
 * the compiled build `require` is the bundle's own, so undici is bundled and evaluated on that call.
 */
export function createUpstreamAgent(options: UpstreamOptions, ca: string[] | undefined): Agent {
  let agent: Agent | undefined;
  const real = (): Agent => {
    const undici = (typeof require === 'function' ? require('undici') : createRequire(import.meta.url)('undici')) as typeof Undici;
    agent ??= new undici.Agent({
      connect: { timeout: options.connectTimeoutMs, ...(ca ? { ca } : {}) },
      headersTimeout: options.responseTimeoutMs,
      bodyTimeout: options.responseTimeoutMs,
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
    return agent;
  };
  return new Proxy({} as Agent, {
    get(_, key) {
      // Closing a pool that was never used needs no undici.
      if (agent === undefined && (key === 'close' || key === 'destroy')) return async () => undefined;
      const value = Reflect.get(real(), key) as unknown;
      return typeof value === 'function' ? value.bind(agent) : value;
    },
  });
}

const TLS_CODES = /^(CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ERR_TLS_|ERR_SSL_|HOSTNAME_MISMATCH)/;

/** The problem an upstream failure is reported as; built from error codes only, never messages. */
export function upstreamProblem(err: unknown): Problem {
  const code = String((err as { code?: unknown })?.code ?? '');
  switch (code) {
    case 'UND_ERR_HEADERS_TIMEOUT':
      return upstreamTimeout('The upstream did not answer in time');
    case 'UND_ERR_BODY_TIMEOUT':
      return upstreamTimeout('The upstream stopped sending its response');
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
      return upstreamUnreachable('Connecting to the upstream timed out');
    case 'ECONNREFUSED':
      return upstreamUnreachable('The upstream refused the connection');
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return upstreamUnreachable('The upstream host name could not be resolved');
    default:
      if (TLS_CODES.test(code)) return upstreamUnreachable(`TLS verification of the upstream failed (${code})`);
      return upstreamUnreachable('The connection to the upstream failed');
  }
}
