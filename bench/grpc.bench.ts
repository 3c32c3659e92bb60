// ProtectValues over loopback: 50,000 rows x 3 columns, Mask and Pseudonymise through the real
// server (engine, identity, wire codec), next to a do-nothing echo handler on the same setup.

import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { createLogger } from '../src/core/logger.ts';
import { Metrics } from '../src/core/metrics.ts';
import type { GatewayConfig } from '../src/config/types.ts';
import { Keyring } from '../src/crypto/keyring.ts';
import { createEngine } from '../src/engine/engine.ts';
import { createIdentity } from '../src/identity/identity.ts';
import { hashSecret } from '../src/identity/secret-hash.ts';
import { startGrpcServer } from '../src/transport/grpc/index.ts';
import { widenReceiveWindows } from '../src/transport/grpc/flow-control.ts';
import { protectServiceDefinition, PROTO_DIR, type ProtectValuesReply } from '../src/transport/grpc/proto.ts';
import type { DecodedProtectValuesRequest } from '../src/transport/grpc/wire.ts';

const ROWS = Number(process.env.BENCH_GRPC_ROWS ?? 50_000);
const LABELS = ['name', 'cardNumber', 'email'];
const CELLS = ROWS * LABELS.length;
/** Each measurement stops after this many calls or this much time, whichever comes first. */
const MAX_CALLS = 10;
const MAX_MS = Number(process.env.BENCH_MS ?? 8000);
const METHOD = '/com.vendor.gateway.ProtectService/ProtectValues';
const MAX_MESSAGE = 64 * 1024 * 1024;

const dataDir = mkdtempSync(join(tmpdir(), 'dpg-grpc-bench-'));
const logger = createLogger({ level: 'silent' });
const config: GatewayConfig = {
  file: join(dataDir, 'gateway.yaml'),
  dataDir,
  http: { listen: { host: '127.0.0.1', port: 0 }, maxBodyBytes: 1, maxFileBytes: 1, requireTokenForFileProtect: true, shutdownGraceMs: 1000 },
  grpc: { listen: { host: '127.0.0.1', port: 0 }, maxMessageBytes: MAX_MESSAGE },
  identity: {
    issuer: 'https://dpg.bench/identity',
    audience: 'dpg-gateway',
    tokenTtlSeconds: 900,
    signingKeyDir: join(dataDir, 'identity'),
    signingKeyRotationSeconds: 86400,
    apiKeys: [],
    clients: [{ id: 'bench', secretHash: hashSecret('bench-secret'), scopes: ['protect', 'reconstruct', 'decrypt'] }],
  },
  keys: { source: 'generated' },
  manifests: fileURLToPath(new URL('../config/manifests', import.meta.url)),
  proxy: { enabled: false, listen: { host: '127.0.0.1', port: 0 }, connectTimeoutMs: 1000, responseTimeoutMs: 1000, routes: [], reverse: [] },
  limits: { maxDepth: 256, maxRows: 1_000_000, maxValueLength: 1024 * 1024, maxDocumentBytes: 64 * 1024 * 1024 },
  logging: { level: 'silent', bufferBytes: 8 * 1024 * 1024 },
};

const keyring = Keyring.fromDocument(
  { defaultKey: 'default', keys: [{ id: 'default', versions: [{ version: 1, activeFrom: '2020-01-01T00:00:00Z', material: Buffer.alloc(32, 7).toString('base64') }] }] },
  'bench keyring',
);
const engine = createEngine({ manifestsDir: config.manifests, keyring });
const identity = await createIdentity(config.identity, { logger, nodeEnv: 'bench' });
const issued = await identity.issueToken({
  apiKey: undefined,
  authorization: undefined,
  form: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'bench', client_secret: 'bench-secret' }),
});
if (issued.status !== 200) throw new Error('bench token request failed');
const token = issued.body.access_token;

const gateway = await startGrpcServer({ config, engine, identity, logger, metrics: new Metrics({ collectDefaults: false }), isReady: () => true });

// The baseline: the same grpc-js server options and the same ProtectValues codec, a handler that returns the rows.
const echo = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE, 'grpc.max_send_message_length': MAX_MESSAGE });
echo.addService(protectServiceDefinition({ maxRows: config.limits.maxRows }), {
  ProtectValues: ((call: grpc.ServerUnaryCall<DecodedProtectValuesRequest, ProtectValuesReply>, callback: grpc.sendUnaryData<ProtectValuesReply>) => {
    callback(null, { rows: call.request.rows });
  }) as grpc.handleUnaryCall<DecodedProtectValuesRequest, ProtectValuesReply>,
});
const echoPort = await new Promise<number>((resolve, reject) =>
  echo.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
);
widenReceiveWindows(echo, MAX_MESSAGE);

// The client side is what any third party would build: proto-loader over proto/gateway.proto.
const definition = loader.loadSync('gateway.proto', { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO_DIR] });
const ProtectService = (grpc.loadPackageDefinition(definition) as any).com.vendor.gateway.ProtectService as typeof grpc.Client & {
  service: grpc.ServiceDefinition;
};
const serialize = ProtectService.service.ProtectValues.requestSerialize as (m: unknown) => Buffer;

const rows = Array.from({ length: ROWS }, (_, i) => ({
  columns: [
    { string_value: `Jane${String.fromCharCode(97 + (i % 26))} Doe${String.fromCharCode(97 + ((i >> 5) % 26))}` },
    { string_value: `4111 ${String(1000 + (i % 9000))} ${String(1000 + ((i * 7) % 9000))} ${String(1000 + ((i * 13) % 9000))}` },
    { string_value: `jane.doe${i}@example.com` },
  ],
}));
const requestFor = (job_type: string) => ({ request_id: `bench-${job_type}`, job_config: { configuration_name: 'customer', job_type }, labels: LABELS, rows });

// A client sending big batches should widen its own receive window too (docs/grpc-api.md).
const clientOptions = {
  'grpc.max_receive_message_length': MAX_MESSAGE,
  'grpc.max_send_message_length': MAX_MESSAGE,
  'grpc-node.flow_control_window': 16 * 1024 * 1024,
};
const md = new grpc.Metadata();
md.set('authorization', `Bearer ${token}`);

/** Sends pre-encoded request bytes and takes the reply as bytes: the server's cost plus the transport. */
function rawCall(client: grpc.Client, bytes: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(METHOD, (b: Buffer) => b, (b: Buffer) => b, bytes, md, (err, reply) => (err ? reject(err) : resolve(reply!.length)));
  });
}

/** A full proto-loader call: protobufjs encodes and decodes on the client too. */
function protoLoaderCall(client: grpc.Client, request: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    (client as any).ProtectValues(request, md, (err: grpc.ServiceError | null, reply: { rows: unknown[] }) =>
      err ? reject(err) : resolve(reply.rows.length),
    );
  });
}

interface Result {
  readonly cellsPerSecond: number;
  readonly medianMs: number;
  readonly calls: number;
  /** Cells per second of CPU time used by this process (client and server together): steadier than wall time on a busy machine. */
  readonly cellsPerCpuSecond: number;
}

async function measure(fn: () => Promise<unknown>): Promise<Result> {
  await fn(); // warm-up: JIT, key derivation caches, HTTP/2 windows
  const times: number[] = [];
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  while (times.length < MAX_CALLS && performance.now() - start < MAX_MS) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  const cpu = process.cpuUsage(cpuStart);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  times.sort((a, b) => a - b);
  const medianMs = times[Math.floor(times.length / 2)];
  return { cellsPerSecond: CELLS / (medianMs / 1000), medianMs, calls: times.length, cellsPerCpuSecond: (CELLS * times.length) / cpuSeconds };
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
function report(label: string, r: Result, note = ''): void {
  console.log(
    `${label.padEnd(40)} ${fmt(r.cellsPerSecond).padStart(10)} cells/s  median ${r.medianMs.toFixed(1).padStart(7)} ms  ` +
      `${fmt(r.cellsPerCpuSecond).padStart(10)} cells/CPU-s  (${r.calls} calls)${note}`,
  );
}

const gatewayClient = new grpc.Client(`127.0.0.1:${gateway.address.port}`, grpc.credentials.createInsecure(), clientOptions);
const echoClient = new grpc.Client(`127.0.0.1:${echoPort}`, grpc.credentials.createInsecure(), clientOptions);
const loaderClient = new ProtectService(`127.0.0.1:${gateway.address.port}`, grpc.credentials.createInsecure(), clientOptions);

try {
  const maskBytes = serialize(requestFor('Mask'));
  const pseudoBytes = serialize(requestFor('Pseudonymise'));
  console.log(`gRPC ProtectValues, ${fmt(ROWS)} rows x ${LABELS.length} columns (${fmt(CELLS)} cells, ${(maskBytes.length / 1048576).toFixed(1)} MiB), loopback, plaintext`);
  console.log(`${cpus().length} CPUs, load average ${loadavg()[0].toFixed(1)} at start (client and server share this process)`);
  const baseline = await measure(() => rawCall(echoClient, maskBytes));
  report('baseline: echo handler, same server setup', baseline);
  const mask = await measure(() => rawCall(gatewayClient, maskBytes));
  report('Mask', mask, `   goal >= 1,000,000: ${mask.cellsPerSecond >= 1_000_000 ? 'met' : 'NOT met'}`);
  const pseudo = await measure(() => rawCall(gatewayClient, pseudoBytes));
  report('Pseudonymise', pseudo, `   goal >= 200,000: ${pseudo.cellsPerSecond >= 200_000 ? 'met' : 'NOT met'}`);
  const loaderMask = await measure(() => protoLoaderCall(loaderClient, requestFor('Mask')));
  report('Mask, proto-loader client (protobufjs)', loaderMask, '   client-side encode/decode included');
} finally {
  gatewayClient.close();
  echoClient.close();
  loaderClient.close();
  await gateway.close(1000);
  echo.forceShutdown();
  await identity.close();
  rmSync(dataDir, { recursive: true, force: true });
}
