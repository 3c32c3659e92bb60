// Prometheus metrics shared by every door. Labels carry names and codes only — never payload data,
// client secrets or tokens — so their cardinality stays bounded by config, not by traffic.

import { X509Certificate } from 'node:crypto';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SHED_REASONS } from './overload.ts';
import { droppedLogLines } from './logger.ts';

export type Door = 'http' | 'file' | 'grpc' | 'proxy' | 'cli';

export interface RequestObservation {
  readonly door: Door;
  /** Job type name, or 'none' when the request failed before one was known. */
  readonly jobType: string;
  /** 'ok' or the catalogue error code. */
  readonly outcome: string;
  readonly seconds: number;
  readonly valuesProtected: number;
}

export interface ProxyObservation {
  readonly route: string;
  /** 'ok', 'passthrough' or an error code. */
  readonly outcome: string;
  /** Time the gateway added (protecting bodies), in seconds. */
  readonly addedSeconds: number;
  readonly valuesProtected: number;
}

/** What identifies the keyring in force (crypto/keyring-fingerprint.ts): never key bytes. */
export interface KeyringObservation {
  readonly fingerprint: string;
  readonly checks: readonly { readonly kid: string; readonly version: number; readonly kcv: string; readonly activeFrom: Date }[];
}

/** Reads a certificate's PEM when scraped (it may be replaced while running); undefined when there is none. */
export type CertificateSource = () => string | undefined;
/** What the overload gauges read at scrape time (core/overload.ts). */
export interface OverloadSource {
  load(): readonly { door: string; requests: number; bytes: number }[];
  loopDelayMs(): number;
  loopUtilisation(): number;
}

/** What the engine counted (engine/tally.ts) and its worker pools (engine/worker-pool.ts), read at scrape time. */
export interface EngineSource {
  tally(): {
    readonly techniques: readonly { readonly jobType: string; readonly technique: string; readonly count: number }[];
    readonly detected: readonly { readonly jobType: string; readonly kind: string; readonly count: number }[];
  };
  workers(): { readonly workers: number; readonly busy: number; readonly queued: number; readonly started: number; readonly lost: number; readonly tasks: number };
}

/** One (door, job type, outcome)'s requests and values so far: plain numbers, read at scrape time. */
interface RequestTally {
  readonly door: string;
  readonly jobType: string;
  readonly outcome: string;
  requests: number;
  values: number;
  readonly latency: DoorLatency;
}

/** One door's request durations: observations per bucket (not cumulative), their sum and count. */
interface DoorLatency {
  readonly perBucket: number[];
  sum: number;
  count: number;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/**
 * dpg_request_duration_seconds, kept in plain arrays per door and rendered by the registry when
 * scraped, in prom-client's histogram format (test/core/metrics.test.ts compares the two): a
 * prom-client Histogram builds and checks a label key on every observation, once per request.
 */
class RequestLatency {
  readonly name = 'dpg_request_duration_seconds';
  readonly help = 'Time to serve a protection request';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly doors = new Map<string, DoorLatency>();

  of(door: string): DoorLatency {
    let d = this.doors.get(door);
    if (d === undefined) {
      d = { perBucket: new Array<number>(LATENCY_BUCKETS.length).fill(0), sum: 0, count: 0 };
      this.doors.set(door, d);
    }
    return d;
  }

  static observe(d: DoorLatency, seconds: number): void {
    if (!Number.isFinite(seconds)) return;
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    if (i < LATENCY_BUCKETS.length) d.perBucket[i]!++;
    d.sum += seconds;
    d.count++;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[] } {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const [door, d] of this.doors) {
      let cumulative = 0;
      for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
        cumulative += d.perBucket[i]!;
        values.push({ labels: { le: LATENCY_BUCKETS[i]!, door }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { le: '+Inf', door }, value: d.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { door }, value: d.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { door }, value: d.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.doors.clear();
  }
}

export class Metrics {
  readonly registry = new Registry();
  private readonly latency = new RequestLatency();
  /** Requests and values per (door, job type, outcome), by `door\0jobType\0outcome`. */
  private readonly tallies = new Map<string, RequestTally>();
  private readonly proxyRequests: Counter<'route' | 'outcome'>;
  private readonly proxyValues: Counter<'route'>;
  private readonly proxyAdded: Histogram<'route'>;
  private readonly keyringInfo: Gauge<'fingerprint'>;
  private readonly keyVersionInfo: Gauge<'key' | 'version' | 'check'>;
  private readonly keyVersionActiveFrom: Gauge<'key' | 'version'>;
  private readonly certificates = new Map<string, CertificateSource>();
  /** The last PEM parsed per certificate and its notAfter: a scrape parses only a changed certificate. */
  private readonly certificateExpiry = new Map<string, { pem: string; notAfter: number }>();
  private readonly sheds: Counter<'door' | 'reason'>;
  private overloadSource: OverloadSource | undefined;
  private engineSource: EngineSource | undefined;
  private readonly configGeneration: Gauge;
  private readonly configReloads: Counter<'result'>;
  private readonly configLastReload: Gauge;

  constructor(options: { collectDefaults?: boolean } = {}) {
    const registers = [this.registry];
    if (options.collectDefaults !== false) collectDefaultMetrics({ register: this.registry });
    // Every request is counted in plain numbers (observeRequest); the counters read them when scraped.
    const tallies = this.tallies;
    new Counter({
      name: 'dpg_requests_total',
      help: 'Protection requests by door, job type and outcome',
      labelNames: ['door', 'job_type', 'outcome'],
      registers,
      collect() {
        this.reset();
        for (const t of tallies.values()) this.inc({ door: t.door, job_type: t.jobType, outcome: t.outcome }, t.requests);
      },
    });
    new Counter({
      name: 'dpg_values_protected_total',
      help: 'Values changed or removed by a technique',
      labelNames: ['door', 'job_type'],
      registers,
      collect() {
        this.reset();
        for (const t of tallies.values()) if (t.values > 0) this.inc({ door: t.door, job_type: t.jobType }, t.values);
      },
    });
    new Counter({
      name: 'dpg_errors_total',
      help: 'Failed requests by error code',
      labelNames: ['door', 'code'],
      registers,
      collect() {
        this.reset();
        for (const t of tallies.values()) if (t.outcome !== 'ok') this.inc({ door: t.door, code: t.outcome }, t.requests);
      },
    });
    this.registry.registerMetric(this.latency as unknown as Histogram);
    this.proxyRequests = new Counter({
      name: 'dpg_proxy_requests_total',
      help: 'Proxied requests that matched a route, by route and outcome',
      labelNames: ['route', 'outcome'],
      registers,
    });
    this.proxyValues = new Counter({
      name: 'dpg_proxy_values_protected_total',
      help: 'Values protected in proxied bodies, by route',
      labelNames: ['route'],
      registers,
    });
    this.proxyAdded = new Histogram({
      name: 'dpg_proxy_added_latency_seconds',
      help: 'Latency the proxy added to a routed request (body protection), by route',
      labelNames: ['route'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 1],
      registers,
    });
    this.keyringInfo = new Gauge({
      name: 'dpg_keyring_info',
      help: 'The keyring in force: its fingerprint (compare it across replicas; docs/keys.md#keyring-fingerprint). Always 1',
      labelNames: ['fingerprint'],
      registers,
    });
    this.keyVersionInfo = new Gauge({
      name: 'dpg_keyring_key_version_info',
      help: 'One series per key version of the keyring in force, with its key check value. Always 1',
      labelNames: ['key', 'version', 'check'],
      registers,
    });
    this.keyVersionActiveFrom = new Gauge({
      name: 'dpg_keyring_key_version_active_from_timestamp_seconds',
      help: 'When each key version of the keyring in force took (or takes) effect, in Unix seconds: the age of the version in use is time() minus the newest one in the past',
      labelNames: ['key', 'version'],
      registers,
    });
    const certificates = this.certificates;
    const expiry = this.certificateExpiry;
    new Gauge({
      name: 'dpg_certificate_expiry_timestamp_seconds',
      help: "notAfter of the gateway's certificates (proxy-ca: the egress proxy's CA; grpc-serving: the gRPC listener's), in Unix seconds",
      labelNames: ['certificate'],
      registers,
      collect() {
        this.reset();
        for (const [name, source] of certificates) {
          const notAfter = notAfterOf(name, source, expiry);
          if (notAfter !== undefined) this.set({ certificate: name }, notAfter);
        }
      },
    });
    const source = () => this.overloadSource;
    this.sheds = new Counter({
      name: 'dpg_overload_shed_total',
      help: 'Requests (and CONNECTs, transparent connections) refused by overload shedding, by door and reason (requests, bytes, event-loop)',
      labelNames: ['door', 'reason'],
      registers,
      // Every gated door's series exists at 0 before its first shed, so rate() over it is defined.
      collect() {
        for (const { door } of source()?.load() ?? []) for (const reason of SHED_REASONS) this.inc({ door, reason }, 0);
      },
    });
    new Gauge({
      name: 'dpg_in_flight_requests',
      help: 'Requests in flight per door (limits.overload.maxRequestsInFlight bounds it)',
      labelNames: ['door'],
      registers,
      collect() {
        this.reset();
        for (const l of source()?.load() ?? []) this.set({ door: l.door }, l.requests);
      },
    });
    new Gauge({
      name: 'dpg_in_flight_request_bytes',
      help: 'Request body bytes in flight per door, declared or received (limits.overload.maxBytesInFlight bounds it)',
      labelNames: ['door'],
      registers,
      collect() {
        this.reset();
        for (const l of source()?.load() ?? []) this.set({ door: l.door }, l.bytes);
      },
    });
    new Gauge({
      name: 'dpg_event_loop_lag_seconds',
      help: 'How late the overload guard last found the event loop (limits.overload.maxEventLoopDelayMs)',
      registers,
      collect() {
        const s = source();
        if (s) this.set(s.loopDelayMs() / 1000);
      },
    });
    new Gauge({
      name: 'dpg_event_loop_utilization',
      help: 'Share of time the event loop was busy, averaged over about a second (limits.overload.maxEventLoopUtilization)',
      registers,
      collect() {
        const s = source();
        if (s) this.set(s.loopUtilisation());
      },
    });
    // The engine's counts and pools are per thread and per configuration generation; the registry
    // reads their totals when scraped instead of being told on every value.
    const engine = () => this.engineSource;
    new Counter({
      name: 'dpg_technique_values_total',
      help: 'Values protected (or restored) by technique, by job type and technique id, over every door; requests that failed count nothing',
      labelNames: ['job_type', 'technique'],
      registers,
      collect() {
        this.reset();
        for (const t of engine()?.tally().techniques ?? []) this.inc({ job_type: t.jobType, technique: t.technique }, t.count);
      },
    });
    new Counter({
      name: 'dpg_detected_values_total',
      help: 'Values found by content detection and protected (or restored), by job type and kind; requests that failed count nothing',
      labelNames: ['job_type', 'kind'],
      registers,
      collect() {
        this.reset();
        for (const d of engine()?.tally().detected ?? []) this.inc({ job_type: d.jobType, kind: d.kind }, d.count);
      },
    });
    new Gauge({
      name: 'dpg_workers',
      help: 'Protection workers alive, by state (busy: running a task; idle: kept until limits.workers.idleMs)',
      labelNames: ['state'],
      registers,
      collect() {
        const w = engine()?.workers();
        this.set({ state: 'busy' }, w?.busy ?? 0);
        this.set({ state: 'idle' }, w === undefined ? 0 : w.workers - w.busy);
      },
    });
    new Gauge({
      name: 'dpg_worker_queued_tasks',
      help: 'Heavy documents waiting for a protection worker (limits.workers.max are running)',
      registers,
      collect() {
        this.set(engine()?.workers().queued ?? 0);
      },
    });
    const lifetimeCounter = (name: string, help: string, read: (w: ReturnType<EngineSource['workers']>) => number): void => {
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          const w = engine()?.workers();
          this.inc(w === undefined ? 0 : read(w));
        },
      });
    };
    lifetimeCounter('dpg_worker_tasks_total', 'Tasks protection workers answered (heavy documents, raw bodies, files)', (w) => w.tasks);
    lifetimeCounter('dpg_workers_started_total', 'Protection workers started (lazily, and to replace one that was lost or reaped when idle)', (w) => w.started);
    lifetimeCounter(
      'dpg_worker_failures_total',
      'Protection workers lost with a task (crashed, ran out of heap or overran limits.workers.timeoutMs): each failed its request with WORKER_FAILED',
      (w) => w.lost,
    );
    new Counter({
      name: 'dpg_log_lines_dropped_total',
      help: "Log lines dropped because stdout's reader was slower than the log for longer than logging.bufferBytes holds (dpg serve never waits for it)",
      registers,
      collect() {
        this.reset();
        this.inc(droppedLogLines());
      },
    });
    this.configGeneration = new Gauge({
      name: 'dpg_config_generation',
      help: 'The configuration generation in force: 1 at start, one more per reload that took effect',
      registers,
    });
    this.configReloads = new Counter({
      name: 'dpg_config_reloads_total',
      help: 'Configuration reloads by result (success, failure: refused, the previous configuration stays in force)',
      labelNames: ['result'],
      registers,
    });
    for (const result of ['success', 'failure']) this.configReloads.inc({ result }, 0);
    this.configLastReload = new Gauge({
      name: 'dpg_config_last_reload_success_timestamp_seconds',
      help: 'When the configuration in force took effect (start or the last successful reload), Unix seconds',
      registers,
    });
  }

  /** Reports a certificate's expiry on every scrape, read afresh from `source`. */
  watchCertificate(name: string, source: CertificateSource): void {
    this.certificates.set(name, source);
  }

  /** The overload gates whose load the in-flight gauges report. */
  trackOverload(source: OverloadSource): void {
    this.overloadSource = source;
  }

  /** The engine's counts and worker pools, read at every scrape. */
  trackEngine(source: EngineSource): void {
    this.engineSource = source;
  }

  observeShed(door: string, reason: string): void {
    this.sheds.inc({ door, reason });
  }

  /** The configuration in force (src/reload/reloader.ts): its generation, and the time it took over. */
  setConfigGeneration(generation: number, at: Date): void {
    this.configGeneration.set(generation);
    this.configLastReload.set(at.getTime() / 1000);
  }

  /** One reload attempt: `success`, or `failure` when the new configuration was refused. */
  observeReload(result: 'success' | 'failure'): void {
    this.configReloads.inc({ result });
  }

  /** Replaces the keyring series (at start, and when a new keyring comes into force). */
  setKeyring(k: KeyringObservation): void {
    this.keyringInfo.reset();
    this.keyringInfo.set({ fingerprint: k.fingerprint }, 1);
    this.keyVersionInfo.reset();
    this.keyVersionActiveFrom.reset();
    for (const c of k.checks) {
      this.keyVersionInfo.set({ key: c.kid, version: String(c.version), check: c.kcv }, 1);
      this.keyVersionActiveFrom.set({ key: c.kid, version: String(c.version) }, Math.floor(c.activeFrom.getTime() / 1000));
    }
  }

  observeRequest(o: RequestObservation): void {
    const key = `${o.door}\u0000${o.jobType}\u0000${o.outcome}`;
    let t = this.tallies.get(key);
    if (t === undefined) {
      // Label values come from config and the catalogue, so this stays small.
      t = { door: o.door, jobType: o.jobType, outcome: o.outcome, requests: 0, values: 0, latency: this.latency.of(o.door) };
      this.tallies.set(key, t);
    }
    t.requests++;
    if (o.valuesProtected > 0) t.values += o.valuesProtected;
    RequestLatency.observe(t.latency, o.seconds);
  }

  observeProxy(o: ProxyObservation): void {
    this.proxyRequests.inc({ route: o.route, outcome: o.outcome });
    if (o.valuesProtected > 0) this.proxyValues.inc({ route: o.route }, o.valuesProtected);
    this.proxyAdded.observe({ route: o.route }, o.addedSeconds);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** notAfter in Unix seconds, or undefined when there is no certificate or it cannot be read (never thrown into a scrape). */
function notAfterOf(name: string, source: CertificateSource, cache: Map<string, { pem: string; notAfter: number }>): number | undefined {
  let pem: string | undefined;
  try {
    pem = source();
  } catch {
    return undefined;
  }
  if (pem === undefined || pem === '') return undefined;
  const cached = cache.get(name);
  if (cached?.pem === pem) return cached.notAfter;
  try {
    const notAfter = Math.floor(Date.parse(new X509Certificate(pem).validTo) / 1000);
    if (!Number.isFinite(notAfter)) return undefined;
    cache.set(name, { pem, notAfter });
    return notAfter;
  } catch {
    return undefined;
  }
}
