// Bytes allocated and CPU per /api/protect body (1 KB JSON, Mask, the http bench's body), in
// process: the envelope read, the job checked, the dataSet protected, the answer written — what
// runs on the event loop per request, without the sockets. Allocation is counted by V8's sampling
// heap profiler with collected objects kept in the count, so it does not depend on the machine's
// load the way req/s does; the baseline in the same run is JSON.parse + JSON.stringify of the same
// body (what the http bench's echo server does with it).
//   npm run bench -- protect-alloc        (a few seconds)

import { Session } from 'node:inspector';
import { readFileSync } from 'node:fs';
import { openEnvelope, type EnvelopeHeaders } from '../src/transport/http/protect-envelope.ts';
import { testEngine } from '../test/helpers/engine.ts';

const N = Number(process.env.ALLOC_REQUESTS ?? 20_000);
const engine = testEngine();
const body = Buffer.from(
  JSON.stringify({
    manifestName: 'customer',
    jobType: 'Mask',
    dataSet: Array.from({ length: 7 }, (_, i) => ({ id: i, name: `Jane Doe ${i}`, email: `jane.doe${i}@example.com`, cardNumber: '4111 1111 1111 1111', phone: '+1 415-555-0100', city: 'Paris' })),
  }),
);
const headers: EnvelopeHeaders = { dataSetType: 'JSON', encoding: 'utf-8', sqlDialect: undefined, requestId: undefined, fallbackRequestId: 'bench-1', maxDepth: 64 };

const protect = (): void => void openEnvelope(body, headers).protect(engine);
const echo = (): void => void Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8'))));

const session = new Session();
session.connect();
const post = <T>(method: string, params?: object): Promise<T> =>
  new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res as T))));

interface SamplingNode {
  selfSize: number;
  children: SamplingNode[];
}

/** Bytes allocated per call (collected objects included) and CPU microseconds per call. */
async function measure(fn: () => void): Promise<{ bytes: number; cpuUs: number }> {
  for (let i = 0; i < 5000; i++) fn(); // warm: optimised code, caches filled
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true });
  for (let i = 0; i < N; i++) fn();
  const { profile } = await post<{ profile: { head: SamplingNode } }>('HeapProfiler.stopSampling');
  let bytes = 0;
  const walk = (n: SamplingNode): void => {
    bytes += n.selfSize;
    n.children.forEach(walk);
  };
  walk(profile.head);
  // CPU apart from the sampling (which costs time of its own).
  const before = process.cpuUsage();
  for (let i = 0; i < N; i++) fn();
  const used = process.cpuUsage(before);
  return { bytes: bytes / N, cpuUs: (used.user + used.system) / N };
}

const base = await measure(echo);
const api = await measure(protect);
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`${N} calls each, load average ${load}`);
console.log(`baseline: JSON.parse + JSON.stringify of the body   ${base.bytes.toFixed(0).padStart(7)} bytes/request   ${base.cpuUs.toFixed(1)} µs CPU/request`);
console.log(`/api/protect body (envelope, job, Mask, answer)     ${api.bytes.toFixed(0).padStart(7)} bytes/request   ${api.cpuUs.toFixed(1)} µs CPU/request`);
session.disconnect();
