// One SIGTERM under load, observed from outside: requests go round-robin over every door at a steady
// rate (open loop), the signal arrives mid-stream, sends go on a little longer (the app finishing its
// own work; new connections are refused by then), and every request's outcome is counted
// (door-clients.ts). Also checked right after the gateway logs
// `shutting down`: /readyz on the admin listener says 503, and a new connection to the HTTP API is
// refused. Shared by test/e2e/drain.test.ts and bench/drain.bench.ts.

import { connect } from 'node:net';
import { request } from 'undici';
import type { Door, OutcomeKind } from './door-clients.ts';

export interface DrainCycle {
  readonly doors: readonly Door[];
  readonly rate: number;
  /** Load before the signal. */
  readonly loadMs: number;
  readonly signal: () => void;
  /** Resolves when the gateway has logged that it is shutting down. */
  readonly shuttingDown: () => Promise<void>;
  readonly exited: Promise<number | null>;
  readonly adminPort: number;
  readonly httpPort: number;
  /**
   * How long sends go on after the signal (default 300 ms): the app finishing its own work. With
   * native sidecars the app has stopped before the gateway's SIGTERM; this is the harder order.
   */
  readonly sendAfterSignalMs?: number;
  /** Every Nth request of a door closes its connection (churn); default 25. */
  readonly resetEvery?: number;
}

export interface DrainResult {
  readonly counts: Record<OutcomeKind, number>;
  /** Outcomes other than ok, by door and kind (with details). */
  readonly failures: Record<string, Record<string, number>>;
  readonly readyzAfterSignal: number | 'unanswered';
  readonly newConnectionAfterSignal: 'refused' | 'accepted';
  readonly exitCode: number | null;
  /** Milliseconds from the signal to the exit. */
  readonly exitMs: number;
  readonly sent: number;
}

function tryConnect(port: number): Promise<'refused' | 'accepted'> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('accepted');
    });
    socket.once('error', () => resolve('refused'));
  });
}

export async function drainCycle(c: DrainCycle): Promise<DrainResult> {
  const counts: Record<OutcomeKind, number> = { ok: 0, refused: 0, reset: 0, cut: 0, status: 0, wrong: 0 };
  const failures: Record<string, Record<string, number>> = {};
  const perDoor = c.doors.map(() => 0);
  const resetEvery = c.resetEvery ?? 25;
  const inflight = new Set<Promise<void>>();
  let sent = 0;
  let exited = false;
  let exitCode: number | null = null;
  let signalledAt = 0;
  let exitAt = 0;
  void c.exited.then((code) => {
    exited = true;
    exitCode = code;
    exitAt = performance.now();
  });

  const send = (): void => {
    const i = sent % c.doors.length;
    const door = c.doors[i];
    const reset = ++perDoor[i] % resetEvery === 0;
    sent++;
    const p = door.send(reset).then(
      (o) => {
        counts[o.kind]++;
        if (o.kind !== 'ok') {
          const byKind = (failures[door.name] ??= {});
          const key = `${o.kind}${o.detail ? ` ${o.detail}` : ''}`;
          byKind[key] = (byKind[key] ?? 0) + 1;
        }
      },
      () => {
        counts.reset++;
      },
    );
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };

  const start = performance.now();
  const intervalMs = 1000 / c.rate;
  let readyz: number | 'unanswered' = 'unanswered';
  let newConnection: 'refused' | 'accepted' = 'accepted';
  const afterSignal = (async () => {
    await new Promise((r) => setTimeout(r, c.loadMs));
    signalledAt = performance.now();
    c.signal();
    await c.shuttingDown();
    const [status, conn] = await Promise.all([
      request(`http://127.0.0.1:${c.adminPort}/readyz`, { reset: true }).then(
        async (r) => {
          await r.body.dump();
          return r.statusCode;
        },
        () => 'unanswered' as const,
      ),
      tryConnect(c.httpPort),
    ]);
    readyz = status;
    newConnection = conn;
  })();
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      if (exited || (signalledAt > 0 && performance.now() - signalledAt > (c.sendAfterSignalMs ?? 300))) return resolve();
      while (start + sent * intervalMs <= performance.now()) send();
      setTimeout(tick, 1);
    };
    tick();
  });
  await afterSignal;
  await Promise.all([...inflight]);
  await c.exited;
  return { counts, failures, readyzAfterSignal: readyz, newConnectionAfterSignal: newConnection, exitCode, exitMs: exitAt - signalledAt, sent };
}
