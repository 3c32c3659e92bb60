// One client per door of a `dpg serve` process, each sending a 1 KB JSON document (or a small CSV,
// or one gRPC row) with a card number and checking the answer: protected doors must not return it
// in clear, pass-through doors must return it untouched (the upstream echoes bodies). Shared by the
// soak (bench/soak.bench.ts), the drain bench (bench/drain.bench.ts) and the drain test
// (test/e2e/drain.test.ts).
//
// Every outcome is classified, because a drain is judged by *how* a request failed:
//   ok        200 and the right answer
//   refused   never reached the gateway: connection refused or not accepted (expected once it drains)
//   reset     the connection closed before any answer (a request sent on a connection being closed)
//   cut       the answer started and did not finish: a request cut mid-body, never acceptable
//   status    an answer other than 200
//   wrong     a 200 with the wrong body (card in clear on a protected door, altered pass-through)

import { Agent, Pool, ProxyAgent, request, type Dispatcher } from 'undici';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { PROTO_DIR } from '../../src/transport/grpc/proto.ts';
import { oneKilobyteJson } from '../../bench/open-loop.ts';

export const CARD = '4111 1111 1111 1111';

export type OutcomeKind = 'ok' | 'refused' | 'reset' | 'cut' | 'status' | 'wrong';
export interface Outcome {
  readonly kind: OutcomeKind;
  /** A short reason (error code, status), never a payload value. */
  readonly detail?: string;
}

export interface Door {
  readonly name: string;
  /** `reset`: close the connection after this request (undici `reset`), so connections churn. */
  send(reset: boolean): Promise<Outcome>;
}

export interface DoorTargets {
  readonly ports: { readonly proxy: number; readonly http: number; readonly grpc: number };
  readonly gatewayCaPem: string;
  readonly upstreamCaPem: string;
  /** Full URLs, by door; a door whose URL is absent is left out. */
  readonly urls: {
    readonly proxyMask: string;
    readonly proxyPseudonymise: string;
    readonly proxyTlsMask: string;
    readonly proxyPass: string;
    readonly proxyBlind: string;
    readonly reverseMask: string;
    readonly transparentMask?: string;
    readonly transparentSpliced?: string;
  };
}

const REFUSED = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT', 'ENOTFOUND', 'EHOSTUNREACH']);

/** Whether an error thrown before any answer says the connection was never made. */
function beforeAnswer(err: unknown): Outcome {
  const e = err as { code?: string; message?: string; cause?: { code?: string } };
  const code = e.cause?.code ?? e.code ?? 'error';
  // A CONNECT the proxy did not answer with 200 (undici's tunnel error) never carried the request.
  if (REFUSED.has(code) || /Proxy response|tunnel/i.test(e.message ?? '')) return { kind: 'refused', detail: code };
  return { kind: 'reset', detail: code };
}

export async function bearerToken(httpPort: number): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'demo-client', client_secret: 'demo-secret' });
  const res = await request(`http://127.0.0.1:${httpPort}/gateway/identity/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': 'demo-api-key' },
    body: form.toString(),
  });
  const json = (await res.body.json()) as { access_token?: string };
  if (res.statusCode !== 200 || !json.access_token) throw new Error(`token request failed: ${res.statusCode}`);
  return json.access_token;
}

function multipart(parts: { name: string; filename: string; contentType: string; body: string }[]): { body: Buffer; contentType: string } {
  const boundary = `----dpgbench${Math.random().toString(16).slice(2)}`;
  const text = parts
    .map((p) => `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\nContent-Type: ${p.contentType}\r\n\r\n${p.body}\r\n`)
    .join('');
  return { body: Buffer.from(`${text}--${boundary}--\r\n`), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The doors' clients; `bearer` is read at each call (a long run refreshes its token). */
export function makeDoors(t: DoorTargets, bearer: () => string): { doors: Door[]; close(): Promise<void> } {
  const proxyUri = `http://127.0.0.1:${t.ports.proxy}`;
  // Absolute-form requests through a bounded pool to the proxy, as an app's HTTP client keeps one
  // (undici's ProxyAgent with proxyTunnel: false opens a connection per concurrent request).
  const absolute = new Pool(proxyUri, { connections: 32 });
  const intercepted = new ProxyAgent({ uri: proxyUri, requestTls: { ca: t.gatewayCaPem }, connections: 32 });
  const blind = new ProxyAgent({ uri: proxyUri, requestTls: { ca: t.upstreamCaPem }, connections: 32 });
  const direct = new Agent({ connections: 32 });
  const body = oneKilobyteJson();

  const exchange = async (url: string, options: Parameters<typeof request>[1], check: (text: string) => boolean): Promise<Outcome> => {
    let res: Dispatcher.ResponseData<unknown>;
    try {
      res = await (options?.dispatcher === absolute
        ? absolute.request({ ...(options as Dispatcher.RequestOptions), path: url, headers: { ...(options.headers as Record<string, string>), host: new URL(url).host } })
        : request(url, options));
    } catch (err) {
      return beforeAnswer(err);
    }
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      return { kind: 'cut', detail: (err as { code?: string }).code ?? 'body error' };
    }
    if (res.statusCode !== 200) return { kind: 'status', detail: String(res.statusCode) };
    return check(text) ? { kind: 'ok' } : { kind: 'wrong' };
  };
  const post = (dispatcher: Dispatcher, url: string, protectedDoor: boolean) => (reset: boolean) =>
    exchange(url, { dispatcher, method: 'POST', headers: { 'content-type': 'application/json' }, body, reset }, (text) => protectedDoor !== text.includes(CARD));

  const api = `http://127.0.0.1:${t.ports.http}`;
  const csv = `name,cardNumber,city\nJane Doe,${CARD},Paris\nJohn Roe,5500 0000 0000 0004,Oslo\n`;
  const definition = loader.loadSync('gateway.proto', { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO_DIR] });
  const Service = (grpc.loadPackageDefinition(definition) as any).com.vendor.gateway.ProtectService;
  const grpcClient = new Service(`127.0.0.1:${t.ports.grpc}`, grpc.credentials.createInsecure());
  const grpcRequest = {
    request_id: 'bench',
    job_config: { configuration_name: 'customer', job_type: 'Mask' },
    labels: ['name', 'cardNumber', 'email'],
    rows: [{ columns: [{ string_value: 'Jane Doe' }, { string_value: CARD }, { string_value: 'jane.doe@example.com' }] }],
  };

  const u = t.urls;
  const doors: (Door | undefined)[] = [
    { name: 'proxy http mask', send: post(absolute, u.proxyMask, true) },
    { name: 'proxy http pseudonymise', send: post(absolute, u.proxyPseudonymise, true) },
    { name: 'proxy https intercepted mask', send: post(intercepted, u.proxyTlsMask, true) },
    { name: 'proxy pass-through', send: post(absolute, u.proxyPass, false) },
    { name: 'proxy blind tunnel', send: post(blind, u.proxyBlind, false) },
    u.transparentMask ? { name: 'transparent mask', send: post(direct, u.transparentMask, true) } : undefined,
    u.transparentSpliced ? { name: 'transparent spliced', send: post(direct, u.transparentSpliced, false) } : undefined,
    { name: 'reverse mask', send: post(direct, u.reverseMask, true) },
    {
      name: '/api/protect',
      send: (reset) =>
        exchange(
          `${api}/api/protect`,
          {
            dispatcher: direct,
            method: 'POST',
            reset,
            headers: { 'content-type': 'application/json', 'x-resource-token': bearer() },
            body: `{"manifestName":"customer","jobType":"Mask","dataSet":${body}}`,
          },
          (text) => !text.includes(CARD),
        ),
    },
    {
      name: '/file/protect',
      send: (reset) => {
        const form = multipart([
          { name: 'protectFileDataset', filename: 'meta.json', contentType: 'application/json', body: '{"manifestName":"customer","jobType":"Mask"}' },
          { name: 'file', filename: 'people.csv', contentType: 'text/csv', body: csv },
        ]);
        return exchange(
          `${api}/file/protect`,
          { dispatcher: direct, method: 'POST', reset, headers: { 'content-type': form.contentType, authorization: `Bearer ${bearer()}` }, body: form.body },
          (text) => !text.includes(CARD) && text.includes('Paris'),
        );
      },
    },
    {
      name: 'grpc ProtectValues',
      send: () =>
        new Promise<Outcome>((resolve) => {
          const md = new grpc.Metadata();
          md.set('authorization', `Bearer ${bearer()}`);
          grpcClient.ProtectValues(grpcRequest, md, { deadline: Date.now() + 30_000 }, (err: grpc.ServiceError | null, reply: { rows: { columns: { string_value: string }[] }[] }) => {
            // UNAVAILABLE: no stream was served (refused, or GOAWAY before it started); a unary call
            // has no partial answer to cut.
            if (err) return resolve(err.code === grpc.status.UNAVAILABLE ? { kind: 'refused', detail: 'UNAVAILABLE' } : { kind: 'status', detail: grpc.status[err.code] });
            resolve(reply.rows[0]?.columns[1]?.string_value === CARD ? { kind: 'wrong' } : { kind: 'ok' });
          });
        }),
    },
  ];
  return {
    doors: doors.filter((d): d is Door => d !== undefined),
    async close() {
      grpcClient.close();
      await Promise.all([absolute, intercepted, blind, direct].map((d) => d.close()));
    },
  };
}
