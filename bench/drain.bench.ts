// The drain: SIGTERM to `dpg serve` under load on every door, DRAIN_CYCLES times (default 20), at
// DRAIN_RATE req/s (default 1,000), in the namespace lab (bench/gateway-lab.ts: forward proxy routed
// Mask and Pseudonymise, intercepted HTTPS, pass-through, blind tunnel, transparent listener routed
// and spliced, reverse listener, /api/protect, /file/protect, gRPC). Each cycle: a fresh gateway,
// DRAIN_LOAD_MS of load (default 2,000), SIGTERM, sends going on for DRAIN_AFTER_MS more (default
// 300: the app finishing its own work; 0 is the native-sidecar order, where the app has stopped
// first). Checked per cycle (test/helpers/drain-cycle.ts): /readyz is 503 right after the signal, a
// new connection is refused, the exit code is 0, nothing was left for the grace timer to cut; and
// over the run: no answer cut mid-body, no request body reaching the upstream incomplete.
//
//   npm run bench -- drain          (root: network namespace and iptables)

import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { OutcomeKind } from '../test/helpers/door-clients.ts';
import { labSkipReason, startLab } from './gateway-lab.ts';

const SELF = fileURLToPath(import.meta.url);
const CYCLES = Number(process.env.DRAIN_CYCLES ?? 20);
const RATE = Number(process.env.DRAIN_RATE ?? 1000);
const LOAD_MS = Number(process.env.DRAIN_LOAD_MS ?? 2000);
const AFTER_MS = Number(process.env.DRAIN_AFTER_MS ?? 300);
const GRACE_MS = 10_000;

interface CycleSpec {
  readonly pid: number;
  readonly targets: import('../test/helpers/door-clients.ts').DoorTargets;
  readonly adminPort: number;
}

/** Inside the namespace: one cycle's load and checks; the signal is sent to the gateway's PID. */
async function cycle(spec: CycleSpec): Promise<void> {
  const { bearerToken, makeDoors } = await import('../test/helpers/door-clients.ts');
  const { drainCycle } = await import('../test/helpers/drain-cycle.ts');
  const token = await bearerToken(spec.targets.ports.http);
  const { doors, close } = makeDoors(spec.targets, () => token);
  // The gateway is not our child here: its exit is seen by polling its /proc entry; its
  // `shutting down` moment by its readiness (the admin listener stays up until the very end).
  const alive = (): boolean => {
    try {
      process.kill(spec.pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const exited = new Promise<number | null>((resolve) => {
    const poll = (): void => (alive() ? void setTimeout(poll, 5) : resolve(null));
    poll();
  });
  const result = await drainCycle({
    doors,
    rate: RATE,
    loadMs: LOAD_MS,
    sendAfterSignalMs: AFTER_MS,
    signal: () => process.kill(spec.pid, 'SIGTERM'),
    // The gateway's log is read by the host side: here `shutting down` is seen as /readyz leaving 200.
    shuttingDown: async () => {
      const { request } = await import('undici');
      for (;;) {
        const status = await request(`http://127.0.0.1:${spec.adminPort}/readyz`, { reset: true }).then(
          async (r) => (await r.body.dump(), r.statusCode),
          () => 0,
        );
        if (status !== 200) return;
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    exited,
    adminPort: spec.adminPort,
    httpPort: spec.targets.ports.http,
  });
  await close();
  process.stdout.write(JSON.stringify({ result }) + '\n');
}

async function main(): Promise<void> {
  const skip = await labSkipReason();
  if (skip) {
    console.log(`drain bench skipped: ${skip}`);
    return;
  }
  const lab = await startLab();
  const totals: Record<OutcomeKind, number> = { ok: 0, refused: 0, reset: 0, cut: 0, status: 0, wrong: 0 };
  const problems: string[] = [];
  const uptime = spawnSync('uptime', { encoding: 'utf8' }).stdout.trim();
  console.log(`drain: ${CYCLES} SIGTERMs, ${RATE} req/s over 11 doors, ${LOAD_MS} ms of load then the signal, sends for ${AFTER_MS} ms after it; grace ${GRACE_MS} ms; ${uptime}`);
  try {
    for (let i = 0; i < CYCLES; i++) {
      const gateway = await lab.startGateway({ shutdownGraceMs: GRACE_MS });
      const driver = lab.spawn(SELF, 'cycle', JSON.stringify({ pid: gateway.pid, targets: gateway.targets, adminPort: gateway.ports.admin } satisfies CycleSpec));
      driver.stderr?.on('data', (d: Buffer) => process.stderr.write(`[driver] ${d}`));
      let out = '';
      driver.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      const [code] = await Promise.all([gateway.exited, new Promise((r) => driver.once('exit', r))]);
      const line = out.split('\n').find((l) => l.startsWith('{"result"'));
      if (!line) throw new Error(`cycle ${i}: the driver gave no result`);
      const r = (JSON.parse(line) as { result: import('../test/helpers/drain-cycle.ts').DrainResult }).result;
      for (const k of Object.keys(totals) as OutcomeKind[]) totals[k] += r.counts[k];
      const cutAtGrace = [...gateway.log.errors.keys()].length; // error-level lines (none expected)
      const graceLines = gateway.log.graceCuts();
      const line1 = `cycle ${String(i + 1).padStart(2)}: exit ${code} in ${Math.round(r.exitMs)} ms, /readyz ${r.readyzAfterSignal}, new connection ${r.newConnectionAfterSignal}, ${JSON.stringify(r.counts)}${graceLines ? `, grace cut ${graceLines}` : ''}${cutAtGrace ? `, ${cutAtGrace} error lines` : ''}`;
      console.log(line1 + (r.counts.reset || r.counts.cut ? `  ${JSON.stringify(r.failures)}` : ''));
      if (code !== 0) problems.push(`cycle ${i + 1}: exit ${code}`);
      if (r.readyzAfterSignal !== 503) problems.push(`cycle ${i + 1}: /readyz ${r.readyzAfterSignal}`);
      if (r.newConnectionAfterSignal !== 'refused') problems.push(`cycle ${i + 1}: a new connection was accepted`);
      if (graceLines) problems.push(`cycle ${i + 1}: the grace timer cut ${graceLines} listener(s)`);
    }
  } finally {
    await lab.close();
  }
  const incomplete = lab.incompleteBodies();
  const met = (ok: boolean): string => (ok ? 'MET' : 'NOT MET');
  console.log(`totals: ${JSON.stringify(totals)}; upstream saw ${incomplete} incomplete request bodies; load now ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`goal: 0 requests cut mid-body over ${CYCLES} SIGTERMs: ${totals.cut} answers cut, ${incomplete} request bodies cut ${met(totals.cut === 0 && incomplete === 0)}`);
  console.log(`goal: every cycle 503 at once, new connections refused, exit 0, nothing cut at the grace limit: ${problems.length === 0 ? 'MET' : `NOT MET (${problems.join('; ')})`}`);
  console.log(`also: ${totals.reset} requests met a connection closing before any answer (sent on a kept-alive connection as the gateway closed it), ${totals.status} non-200, ${totals.wrong} wrong answers`);
}

if (process.argv[2] === 'cycle') await cycle(JSON.parse(process.argv[3]) as CycleSpec);
else await main();
