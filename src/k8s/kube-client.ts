// The few Kubernetes API calls `dpg webhook certs --kube` makes, over HTTPS with the pod's service
// account (the token and CA Kubernetes mounts into every pod). No client library: four verbs on two
// resource types do not justify one, and the webhook server itself never talks to the API.

import { readFileSync } from 'node:fs';
import { request } from 'node:https';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface KubeConnection {
  /** https://host:port of the API server. */
  readonly server: string;
  readonly token: string;
  /** PEM CA bundle that signed the API server's certificate. */
  readonly ca: string;
}

/** The in-cluster connection: KUBERNETES_SERVICE_HOST/PORT and the mounted service account. */
export function inClusterConnection(env: NodeJS.ProcessEnv = process.env, dir = SERVICE_ACCOUNT_DIR): KubeConnection {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  if (!host) throw new Error('not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST is not set)');
  let token: string;
  let ca: string;
  try {
    token = readFileSync(`${dir}/token`, 'utf8').trim();
    ca = readFileSync(`${dir}/ca.crt`, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the service account token or CA in ${dir} (is automountServiceAccountToken off?)`, { cause: err });
  }
  const bracketed = host.includes(':') ? `[${host}]` : host;
  return { server: `https://${bracketed}:${port}`, token, ca };
}

export interface KubeResponse {
  readonly status: number;
  readonly body: unknown;
}

export class KubeClient {
  constructor(private readonly connection: KubeConnection) {}

  request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeResponse> {
    const url = new URL(path, this.connection.server);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          ca: this.connection.ca,
          headers: {
            authorization: `Bearer ${this.connection.token}`,
            accept: 'application/json',
            ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}),
          },
          timeout: 15_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              // Not JSON (a proxy's error page): keep the status, drop the body.
              parsed = undefined;
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`Kubernetes API ${method} ${url.pathname} timed out`)));
      req.on('error', (err) => reject(new Error(`Kubernetes API ${method} ${url.pathname} failed: ${err.message}`, { cause: err })));
      req.end(payload);
    });
  }
}

/** An API error with the status and the API's own reason (never the request body). */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    what: string,
    body: unknown,
  ) {
    const reason = body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string' ? `: ${(body as { message: string }).message.slice(0, 300)}` : '';
    super(`${what} failed with HTTP ${status}${reason}`);
  }
}
