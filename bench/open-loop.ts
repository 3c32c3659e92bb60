// An open-loop constant-rate load generator: sends follow the clock, not the answers, and each
// latency is measured from its actual send, so a slow server cannot hide its queueing (no
// coordinated omission). Shared by bench/proxy.bench.ts and bench/transparent.bench.ts.

import { Pool } from 'undici';

export interface Percentiles {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** When the slowest measured request was sent, in ms after the measurement started (diagnosis). */
  readonly maxAtMs: number;
  readonly errors: number;
}

export interface LoadSpec {
  /** e.g. http://api.bench.test:80 */
  readonly origin: string;
  readonly path: string;
  readonly rate: number;
  readonly body: string;
  readonly warmupMs: number;
  readonly measureMs: number;
  /** Keep-alive connections of the pool. */
  readonly connections?: number;
  /** Extra request headers (e.g. the origin's Host when `path` is absolute-form, through a forward proxy). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Numbers each measured request with an `x-bench-seq` header (from `next.n`, shared by loads
   * running side by side) and keeps its latency under that number, for a probe in the proxy to
   * match (bench/peers/tail-probe.mjs).
   */
  readonly trace?: { readonly latencies: Map<number, number>; readonly next: { n: number } };
}

export async function constantRate(spec: LoadSpec): Promise<Percentiles> {
  const pool = new Pool(spec.origin, { connections: spec.connections ?? 64, pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { 'content-type': 'application/json', ...spec.headers };
  const latencies: number[] = [];
  let errors = 0;
  let maxAtMs = 0;
  let max = -1;
  const send = async (record: boolean): Promise<void> => {
    const seq = record && spec.trace !== undefined ? spec.trace.next.n++ : undefined;
    const sentAt = performance.now();
    try {
      const res = await pool.request({ path: spec.path, method: 'POST', headers: seq === undefined ? headers : { ...headers, 'x-bench-seq': String(seq) }, body: spec.body });
      await res.body.dump();
      if (res.statusCode !== 200) errors++;
    } catch {
      errors++;
    }
    if (!record) return;
    const latency = performance.now() - sentAt;
    latencies.push(latency);
    if (seq !== undefined) spec.trace!.latencies.set(seq, latency);
    if (latency > max) {
      max = latency;
      maxAtMs = sentAt - start - spec.warmupMs;
    }
  };
  const intervalMs = 1000 / spec.rate;
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  const end = start + spec.warmupMs + spec.measureMs;
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      // Timer ticks, not a busy loop: a spinning generator would steal the CPU it is measuring.
      while (start + sent * intervalMs <= now && start + sent * intervalMs < end) {
        inflight.push(send(start + sent * intervalMs >= start + spec.warmupMs));
        sent++;
      }
      if (start + sent * intervalMs >= end) resolve();
      else setTimeout(tick, 0);
    };
    tick();
  });
  await Promise.all(inflight);
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { p50: at(0.5), p99: at(0.99), max: latencies[latencies.length - 1], maxAtMs, errors };
}

/** A 1 KB JSON document with a few protected fields. */
export function oneKilobyteJson(): string {
  const doc = {
    customer: { name: 'Ada Lovelace', email: 'ada.lovelace@example.com', cardNumber: '4111 1111 1111 1111', phone: '+44 20 7946 0958' },
    order: { id: 'ord-0001', items: [] as { sku: string; qty: number }[] },
  };
  while (JSON.stringify(doc).length < 1000) doc.order.items.push({ sku: `sku-${doc.order.items.length}`, qty: 1 });
  return JSON.stringify(doc).padEnd(1024, ' ');
}
