// The connection pool to upstreams (one undici Agent: keep-alive pools per origin, HTTP/2 where the
// upstream offers it) and how its failures read to the app: cannot connect → 502, no timely answer → 504.

import { closeSync, openSync, readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import type { Agent, Dispatcher } from 'undici';
import { isDescriptorShortage } from './connection-limits.ts';
import { upstreamTimeout, upstreamUnreachable, type Problem } from '../problem.ts';

export interface UpstreamOptions {
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  /** PEM file of extra roots, trusted in addition to Node's bundled roots. */
  readonly upstreamCa?: string;
  /** Told once if undici could not be loaded after all: the pool will never work in this process. */
  readonly onLoadFailed?: (err: unknown) => void;
  /** Clear-text upstreams are spoken to in HTTP/2 with prior knowledge (for apps that chose h2c). */
  readonly h2c?: boolean;
}

/**
 * The roots for upstream TLS, parsed once into one context shared by every upstream connection (the
 * REST pool, HTTP/2 sessions, spliced upgrades): given as `ca` to each connect, every new TLS
 * connection parsed the whole bundle again (~150 PEM certificates, 10–50 ms of the event loop),
 * stalling every request in flight whenever a connection opened. Undefined keeps Node's defaults
 * (bundled roots + NODE_EXTRA_CA_CERTS), which Node already keeps parsed.
 */
export function upstreamRoots(upstreamCa: string | undefined): SecureContext | undefined {
  if (upstreamCa === undefined) return undefined;
  let extra: string;
  try {
    extra = readFileSync(upstreamCa, 'utf8');
  } catch (err) {
    throw new Error(`proxy.upstreamCa ${upstreamCa} could not be read`, { cause: err });
  }
  return createSecureContext({ ca: [...rootCertificates, extra] });
}

/** Descriptors that must be free before undici's module is read (its chunk, and a margin). */
const IMPORT_DESCRIPTORS = 4;

/** Whether `count` file descriptors can be opened now (true where /dev/null cannot be opened at all). */
function descriptorsFree(count: number): boolean {
  const fds: number[] = [];
  try {
    for (let i = 0; i < count; i++) fds.push(openSync('/dev/null', 'r'));
    return true;
  } catch (err) {
    return !isDescriptorShortage(err);
  } finally {
    for (const fd of fds) closeSync(fd);
  }
}

/**
 * The upstream pool. undici (~40 ms and several MB to load) is imported with the first upstream
 * request, not at start: an idle sidecar never pays for it, and in the compiled build it sits in a
 * chunk of its own (docs/performance.md, footprint). Until then the pool is a stand-in whose
 * request() and dispatch() wait for the import; the proxy uses no other method but close().
 */
export function createUpstreamAgent(options: UpstreamOptions, roots: SecureContext | undefined): Agent {
  let agent: Agent | undefined;
  let loading: Promise<Agent> | undefined;
  // Node keeps a failed dynamic import for the life of the process: had undici's file been read
  // while the process was out of descriptors (EMFILE), no upstream could be reached until a
  // restart. So the first load waits for free descriptors; until then each request fails as a
  // descriptor shortage (502, not ready for a while) and a later one loads it.
  const real = (): Promise<Agent> => {
    if (loading === undefined && !descriptorsFree(IMPORT_DESCRIPTORS)) {
      return Promise.reject(Object.assign(new Error('Out of file descriptors before the upstream client was loaded'), { code: 'EMFILE' }));
    }
    return (loading ??= import('undici').then((module) => {
      // undici is CommonJS: in the bundle its exports arrive only as the namespace's default.
      const UndiciAgent = module.Agent ?? module.default.Agent;
      agent = new UndiciAgent({
        // useH2c goes to the connector (undici's Agent builds it from `connect`, not from its own options).
        connect: { timeout: options.connectTimeoutMs, ...(roots ? { secureContext: roots } : {}), ...(options.h2c ? { useH2c: true } : {}) },
        headersTimeout: options.responseTimeoutMs,
        bodyTimeout: options.responseTimeoutMs,
        keepAliveTimeout: 30_000,
        pipelining: 1,
        // HTTP/2 when the upstream's ALPN offers it (one multiplexed session per origin), else HTTP/1.1.
        allowH2: true,
      });
      return agent;
    }, (err: unknown) => {
      options.onLoadFailed?.(err);
      throw err;
    }));
  };
  // The loaded pool's methods, bound once: not a bound function per request on the hot path.
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy({} as Agent, {
    get(_, key) {
      if (agent !== undefined) {
        const known = bound.get(key);
        if (known !== undefined) return known;
        const value = Reflect.get(agent, key) as unknown;
        if (typeof value !== 'function') return value;
        const method = value.bind(agent);
        bound.set(key, method);
        return method;
      }
      // A pool that was never used, or never loaded, has nothing to close.
      if (key === 'close' || key === 'destroy') {
        const pending = loading;
        return pending ? (...args: unknown[]) => pending.then((a) => (a[key] as (...x: unknown[]) => unknown)(...args), () => undefined) : async () => undefined;
      }
      if (key === 'request') return (...args: unknown[]) => real().then((a) => (a[key] as (...x: unknown[]) => unknown)(...args));
      // dispatch() answers through its handler: a pool that cannot load fails the request there.
      if (key === 'dispatch') {
        return (options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => {
          real().then(
            (a) => a.dispatch(options, handler),
            (err: Error) => (handler as { onError(err: Error): void }).onError(err),
          );
          return true;
        };
      }
      throw new Error(`upstream pool: ${String(key)} is not available before the first request`);
    },
  });
}

// Node's TLS errors, and OpenSSL's X509_V_ERR_* names as Node gives them (without the prefix).
const TLS_CODES = /^(CERT_|CRL_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ERROR_IN_(?:CERT|CRL)_|INVALID_CA$|INVALID_PURPOSE$|PATH_LENGTH_EXCEEDED$|ERR_TLS_|ERR_SSL_|HOSTNAME_MISMATCH)/;

/** An error code of a failed upstream TLS handshake or certificate check (OpenSSL's or Node's). */
export const isUpstreamTlsCode = (code: string): boolean => TLS_CODES.test(code);

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
      if (isUpstreamTlsCode(code)) return upstreamUnreachable(`TLS verification of the upstream failed (${code})`);
      return upstreamUnreachable('The connection to the upstream failed');
  }
}
