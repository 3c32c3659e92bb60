// Starts the real HTTP door (real engine, real identity, real listener on 127.0.0.1:0) for the
// whole-process tests, with every log line captured so tests can scan them for leaks.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import type { GatewayConfig, HttpConfig, IdentityConfig } from '../../src/config/types.ts';
import type { Engine } from '../../src/engine/types.ts';
import type { Overload } from '../../src/core/overload.ts';
import { createIdentity } from '../../src/identity/identity.ts';
import type { Identity } from '../../src/identity/types.ts';
import type { SecretCheckLimits } from '../../src/identity/secret-check-gate.ts';
import { startHttpServer } from '../../src/transport/http/server.ts';
import { testEngine } from '../helpers/engine.ts';

export { API_KEY, CLIENTS, identityConfig } from '../helpers/identity.ts';
import { API_KEY } from '../helpers/identity.ts';
import { testGatewayConfig } from '../helpers/gateway-config.ts';

export function gatewayConfig(dataDir: string, http: Partial<HttpConfig> = {}, identity: Partial<IdentityConfig> = {}): GatewayConfig {
  return testGatewayConfig(dataDir, { http, identity });
}

export interface TestGateway {
  readonly base: string;
  readonly logs: string[];
  readonly identity: Identity;
  readonly metrics: Metrics;
  readonly dataDir: string;
  ready: boolean;
  caPem: string | undefined;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  readonly http?: Partial<HttpConfig>;
  readonly identity?: Partial<IdentityConfig>;
  readonly engine?: Engine;
  readonly now?: () => number;
  /** Bounds on concurrent token-endpoint secret checks (createIdentity's secretChecks). */
  readonly secretChecks?: SecretCheckLimits;
  /** Overload shedding (core/overload.ts); absent: none. */
  readonly overload?: Overload;
}

export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'dpg-http-'));
  const logs: string[] = [];
  const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void logs.push(line) } });
  const config = gatewayConfig(dataDir, options.http, options.identity);
  const metrics = new Metrics({ collectDefaults: false });
  const identity = await createIdentity(config.identity, {
    logger,
    nodeEnv: 'test',
    ...(options.now ? { now: options.now } : {}),
    ...(options.secretChecks ? { secretChecks: options.secretChecks } : {}),
  });
  const gateway: TestGateway = {
    base: '',
    logs,
    identity,
    metrics,
    dataDir,
    ready: true,
    caPem: undefined,
    async close() {
      await server.close(500);
      await identity.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  const server = await startHttpServer({
    config,
    engine: options.engine ?? testEngine(),
    identity,
    logger,
    metrics,
    isReady: () => gateway.ready,
    proxyCaPem: () => gateway.caPem,
    ...(options.overload ? { overload: options.overload } : {}),
  });
  (gateway as { base: string }).base = `http://127.0.0.1:${server.address.port}`;
  return gateway;
}

export async function tokenFor(base: string, client: { id: string; secret: string }, scope?: string): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret });
  if (scope !== undefined) form.set('scope', scope);
  const res = await request(`${base}/gateway/identity/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': API_KEY },
    body: form.toString(),
  });
  const body = (await res.body.json()) as { access_token?: string };
  if (res.statusCode !== 200 || typeof body.access_token !== 'string') throw new Error(`token request failed: ${res.statusCode}`);
  return body.access_token;
}

export interface JsonResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  readonly json: any;
}

export async function postJson(base: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  const res = await request(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** Builds a multipart/form-data body in memory (small test payloads). */
export function multipart(parts: { name: string; filename?: string; contentType?: string; body: string | Buffer }[]): {
  body: Buffer;
  contentType: string;
} {
  const boundary = `----dpgtest${Math.random().toString(16).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if (part.filename !== undefined) head += `; filename="${part.filename}"`;
    head += '\r\n';
    if (part.contentType !== undefined) head += `Content-Type: ${part.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.isBuffer(part.body) ? part.body : Buffer.from(part.body), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
