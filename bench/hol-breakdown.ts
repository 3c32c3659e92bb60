// Where the slowest light requests of bench/head-of-line.bench.ts spent their time, from the driver's
// samples and hol-trace.mjs's records in the gateway: the legs of each request (to the gateway, in
// it — before, at and after the upstream — and back), and what overlapped it: the gateway loop's
// stalls (split into time on a core, runnable without one, and asleep), its GC pauses, and the
// driver's own loop stalls. Counted from timestamps, so it holds on a busy machine as a split even
// when the totals do not.

/** One light request: its `x-hol-seq` tag, when it was sent (epoch ms) and its latency. */
export interface LightSample {
  readonly seq: string;
  readonly at: number;
  readonly ms: number;
}

/** hol-trace.mjs's records (epoch ms). */
export interface Stall {
  readonly at: number;
  readonly ms: number;
  /** The loop thread's ms on a core and runnable without one during the stall. */
  readonly run: number;
  readonly wait: number;
}
export interface Gc {
  readonly at: number;
  readonly ms: number;
  readonly kind: string;
}
export interface GatewayRequest {
  readonly seq: string;
  readonly start?: number;
  readonly bodyEnd?: number;
  readonly upstreamSent?: number;
  readonly upstreamAnswered?: number;
  readonly finish?: number;
}
export interface GatewayTrace {
  readonly stalls: Stall[];
  readonly gcs: Gc[];
  readonly requests: GatewayRequest[];
}

export interface BreakdownInput {
  /** Per door: the loaded phase's samples. */
  readonly loaded: Record<string, readonly LightSample[]>;
  readonly span: { readonly from: number; readonly to: number };
  readonly gateway: GatewayTrace;
  readonly driver: { readonly stalls: readonly Stall[]; readonly gcs: readonly Gc[] };
}

const overlap = (a0: number, a1: number, b0: number, b1: number): number => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));

interface Overlaps {
  stall: number;
  run: number;
  wait: number;
  asleep: number;
  gc: number;
  major: number;
  driverStall: number;
}

/** What of the gateway's and the driver's records overlapped [t0, t1]; a stall's split is shared pro rata. */
function overlaps(t0: number, t1: number, gateway: GatewayTrace, driver: BreakdownInput['driver']): Overlaps {
  const o: Overlaps = { stall: 0, run: 0, wait: 0, asleep: 0, gc: 0, major: 0, driverStall: 0 };
  for (const s of gateway.stalls) {
    const ms = overlap(t0, t1, s.at, s.at + s.ms);
    if (ms === 0) continue;
    const share = ms / s.ms;
    o.stall += ms;
    o.run += s.run * share;
    o.wait += s.wait * share;
    o.asleep += Math.max(0, s.ms - s.run - s.wait) * share;
  }
  for (const g of gateway.gcs) {
    const ms = overlap(t0, t1, g.at, g.at + g.ms);
    o.gc += ms;
    if (g.kind === 'major') o.major += ms;
  }
  for (const s of driver.stalls) o.driverStall += overlap(t0, t1, s.at, s.at + s.ms);
  return o;
}

interface Legs {
  toGateway: number;
  beforeUpstream: number;
  upstream: number;
  afterUpstream: number;
  inGateway: number;
  back: number;
}

function legsOf(s: LightSample, g: GatewayRequest | undefined): Legs | undefined {
  if (!g?.start || !g.finish) return undefined;
  const end = s.at + s.ms;
  const routed = g.upstreamSent !== undefined && g.upstreamAnswered !== undefined;
  return {
    toGateway: g.start - s.at,
    beforeUpstream: routed ? g.upstreamSent! - g.start : 0,
    upstream: routed ? g.upstreamAnswered! - g.upstreamSent! : 0,
    afterUpstream: routed ? g.finish - g.upstreamAnswered! : 0,
    inGateway: g.finish - g.start,
    back: end - g.finish,
  };
}

const f = (ms: number): string => ms.toFixed(ms < 10 ? 1 : 0);

/** The lines to print: per door its slowest requests (those at or above p99, at least 3), then the phase's totals. */
export function breakdown(input: BreakdownInput): string[] {
  const out: string[] = [];
  const bySeq = new Map(input.gateway.requests.map((r) => [r.seq, r]));
  const total: Legs & Overlaps & { n: number; ms: number } = { n: 0, ms: 0, toGateway: 0, beforeUpstream: 0, upstream: 0, afterUpstream: 0, inGateway: 0, back: 0, stall: 0, run: 0, wait: 0, asleep: 0, gc: 0, major: 0, driverStall: 0 };
  for (const [door, samples] of Object.entries(input.loaded)) {
    const slow = [...samples].sort((a, b) => b.ms - a.ms).slice(0, Math.max(3, Math.ceil(samples.length / 100)));
    out.push(`  slowest ${slow.length} on ${door} (ms; legs: to gateway / in gateway [before upstream, upstream, after] / back; overlapping: gateway loop stalls [on a core, waiting for one, asleep], gateway GC [major], driver loop stalls):`);
    for (const s of slow) {
      const legs = legsOf(s, bySeq.get(s.seq));
      const o = overlaps(s.at, s.at + s.ms, input.gateway, input.driver);
      const when = ((s.at - input.span.from) / 1000).toFixed(2);
      const legText = legs
        ? `${f(legs.toGateway)} / ${f(legs.inGateway)}${legs.upstream || legs.beforeUpstream ? ` [${f(legs.beforeUpstream)}, ${f(legs.upstream)}, ${f(legs.afterUpstream)}]` : ''} / ${f(legs.back)}`
        : 'not seen by the gateway';
      out.push(
        `    ${f(s.ms).padStart(6)} at +${when} s: ${legText}; stalls ${f(o.stall)} [${f(o.run)}, ${f(o.wait)}, ${f(o.asleep)}], GC ${f(o.gc)} [${f(o.major)}], driver ${f(o.driverStall)}`,
      );
      total.n++;
      total.ms += s.ms;
      for (const k of ['stall', 'run', 'wait', 'asleep', 'gc', 'major', 'driverStall'] as const) total[k] += o[k];
      if (legs) for (const k of ['toGateway', 'beforeUpstream', 'upstream', 'afterUpstream', 'inGateway', 'back'] as const) total[k] += legs[k];
    }
  }
  if (total.n > 0) {
    const pct = (ms: number): string => `${((ms / total.ms) * 100).toFixed(0)}%`;
    out.push(
      `  the ${total.n} slowest together, ${f(total.ms)} ms: to gateway ${pct(total.toGateway)}, in gateway ${pct(total.inGateway)} (upstream ${pct(total.upstream)}), back ${pct(total.back)}; ` +
        `overlapped by gateway loop stalls ${pct(total.stall)} (on a core ${pct(total.run)}, waiting for one ${pct(total.wait)}, asleep ${pct(total.asleep)}), GC ${pct(total.gc)} (major ${pct(total.major)}), driver stalls ${pct(total.driverStall)}`,
    );
  }
  const { from, to } = input.span;
  const inSpan = <T extends { at: number }>(xs: readonly T[]): T[] => xs.filter((x) => x.at >= from && x.at <= to);
  const stalls = inSpan(input.gateway.stalls);
  const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
  const max = (xs: readonly number[]): number => xs.reduce((a, b) => Math.max(a, b), 0);
  out.push(
    `  loaded phase, ${((to - from) / 1000).toFixed(1)} s: gateway loop stalls ≥ 10 ms: ${stalls.length}, ${f(sum(stalls.map((s) => s.ms)))} ms (longest ${f(max(stalls.map((s) => s.ms)))}; ` +
      `on a core ${f(sum(stalls.map((s) => s.run)))}, waiting for one ${f(sum(stalls.map((s) => s.wait)))})`,
  );
  const gcs = inSpan(input.gateway.gcs);
  const kinds = [...new Set(gcs.map((g) => g.kind))].sort();
  out.push(
    `  gateway main-thread GC: ${kinds.map((k) => { const ms = gcs.filter((g) => g.kind === k).map((g) => g.ms); return `${k} ${ms.length}× ${f(sum(ms))} ms (longest ${f(max(ms))})`; }).join(', ') || 'none'}`,
  );
  // The loop thread during the GC pauses that fell in a stall: asleep there means it waited for V8's
  // helper threads to finish their share of a parallel collection.
  const during = { run: 0, wait: 0, asleep: 0 };
  for (const g of gcs) {
    const o = overlaps(g.at, g.at + g.ms, { stalls, gcs: [], requests: [] }, { stalls: [], gcs: [] });
    during.run += o.run;
    during.wait += o.wait;
    during.asleep += o.asleep;
  }
  out.push(`  the loop thread during those GC pauses: on a core ${f(during.run)} ms, waiting for one ${f(during.wait)} ms, asleep (waiting for GC helper threads) ${f(during.asleep)} ms`);
  const ds = inSpan(input.driver.stalls);
  out.push(`  driver loop stalls ≥ 10 ms: ${ds.length}, ${f(sum(ds.map((s) => s.ms)))} ms (longest ${f(max(ds.map((s) => s.ms)))}); driver GC ${f(sum(inSpan(input.driver.gcs).map((g) => g.ms)))} ms`);
  const heavy = input.gateway.requests.filter((r) => r.seq.startsWith('heavy.loaded.') && r.start !== undefined && r.start >= from - 1000);
  for (const h of heavy) {
    const rel = (t: number | undefined): string => (t === undefined ? '–' : `+${((t - from) / 1000).toFixed(2)} s`);
    out.push(`  heavy ${h.seq.slice('heavy.loaded.'.length).padEnd(4)} in the gateway: headers ${rel(h.start)}, body read ${rel(h.bodyEnd)}, answer written ${rel(h.finish)}`);
  }
  return out;
}
