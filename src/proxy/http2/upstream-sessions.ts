// HTTP/2 client sessions to upstreams, one per origin, for gRPC calls: a call is one stream that
// may stay open both ways for as long as the app likes (bidi streaming), with trailers at its end,
// which node:http2's own client carries as they are. (REST requests take undici's pool, upgrade.ts
// and exchange.ts: it negotiates h2 or HTTP/1.1 by itself.) Upstream TLS is verified as the pool's.

import { connect, type ClientHttp2Session } from 'node:http2';
import { isIP } from 'node:net';
import type { SecureContext } from 'node:tls';
import type { Target } from '../exchange/exchange.ts';
import { originOf } from '../exchange/exchange.ts';

export interface UpstreamSessionOptions {
  /** Roots for upstream TLS, parsed once (undefined: Node's defaults): the REST pool's (upstream.ts `upstreamRoots`). */
  readonly roots: SecureContext | undefined;
  readonly connectTimeoutMs: number;
}

export class UpstreamSessions {
  readonly #sessions = new Map<string, ClientHttp2Session>();
  readonly #options: UpstreamSessionOptions;

  constructor(options: UpstreamSessionOptions) {
    this.#options = options;
  }

  /** The session to a target's upstream: the open one, else a new one (its streams wait for the connection). */
  sessionFor(target: Target): ClientHttp2Session {
    const servername = target.scheme !== 'https' ? undefined : target.connectTo ? target.connectTo.servername : isIP(target.host) === 0 ? target.host : undefined;
    const origin = originOf(target);
    const key = `${origin}|${servername ?? ''}`;
    const open = this.#sessions.get(key);
    if (open !== undefined && !open.closed && !open.destroyed) return open;
    const session = connect(origin, {
      ...(target.scheme === 'https' && this.#options.roots ? { secureContext: this.#options.roots } : {}),
      ...(servername !== undefined ? { servername } : {}),
      settings: { enablePush: false },
    });
    this.#sessions.set(key, session);
    const forget = (): void => {
      if (this.#sessions.get(key) === session) this.#sessions.delete(key);
    };
    const timer = setTimeout(() => session.destroy(Object.assign(new Error('Connecting to the upstream timed out'), { code: 'ETIMEDOUT' })), this.#options.connectTimeoutMs);
    timer.unref();
    session.once('connect', () => clearTimeout(timer));
    // Errors reach each stream of the session; the session itself is only forgotten.
    session.on('error', forget);
    session.on('goaway', forget);
    session.on('close', () => {
      clearTimeout(timer);
      forget();
    });
    // An idle session does not keep the process up (shutdown closes them all anyway).
    session.unref();
    return session;
  }

  /** Closes every session: streams under way finish, no new ones start. */
  close(): void {
    for (const session of this.#sessions.values()) session.close();
    this.#sessions.clear();
  }
}
