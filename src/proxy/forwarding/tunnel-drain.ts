// Shutdown of the connections the proxy relays without reading them (blind CONNECT tunnels, spliced
// upgrades, the transparent listener's spliced and relayed connections). Their bytes cannot be read
// as requests, but their direction can be watched: bytes from the app mean a request is on its way
// up, bytes towards the app mean its answer is coming back. A tunnel is closed once it is between
// exchanges — quiet for QUIET_MS after bytes went to the app — and kept while a request waits for its
// answer, up to the grace period (the caller's timer cuts what is left). A tunnel that stays silent
// through the first UNKNOWN_QUIET_MS of the drain is taken as idle: what it did before is not known.

import type { Duplex } from 'node:stream';

const QUIET_MS = 100;
const UNKNOWN_QUIET_MS = 1000;
const CHECK_EVERY_MS = 25;

/** Sockets the proxy dialed (the upstream end of a relay); the rest are app ends. */
const upstreamSides = new WeakSet<Duplex>();

export function markUpstreamSide(socket: Duplex): void {
  upstreamSides.add(socket);
}

interface Watch {
  fromApp: number;
  toApp: number;
  changedAt: number;
  /** What moved last: up (request bytes), down (answer bytes), or nothing seen since the drain began. */
  last: 'up' | 'down' | 'unknown';
}

function counters(socket: Duplex): { fromApp: number; toApp: number } {
  const s = socket as Duplex & { bytesRead?: number; bytesWritten?: number };
  const read = s.bytesRead ?? 0;
  const written = s.bytesWritten ?? 0;
  return upstreamSides.has(socket) ? { fromApp: written, toApp: read } : { fromApp: read, toApp: written };
}

/**
 * Closes each socket of `sockets` (a live set: closed sockets leave it) once its relay is between
 * exchanges. Resolves when the set is empty; `stop()` ends the watching (the grace timer fired).
 */
export function drainTunnels(sockets: Set<Duplex>, now: () => number = () => performance.now()): { done: Promise<void>; stop(): void } {
  const watches = new Map<Duplex, Watch>();
  let timer: NodeJS.Timeout | undefined;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const check = (): void => {
    const t = now();
    for (const socket of sockets) {
      const c = counters(socket);
      let w = watches.get(socket);
      if (w === undefined) {
        w = { ...c, changedAt: t, last: 'unknown' };
        watches.set(socket, w);
      } else if (c.toApp !== w.toApp) {
        // Answer bytes (maybe request bytes too): an exchange is finishing.
        Object.assign(w, c, { changedAt: t, last: 'down' });
      } else if (c.fromApp !== w.fromApp) {
        Object.assign(w, c, { changedAt: t, last: 'up' });
      }
      const quiet = t - w.changedAt;
      if ((w.last === 'down' && quiet >= QUIET_MS) || (w.last === 'unknown' && quiet >= UNKNOWN_QUIET_MS)) socket.destroy();
    }
    for (const socket of watches.keys()) if (!sockets.has(socket)) watches.delete(socket);
    if (sockets.size === 0) {
      finish();
      return;
    }
    timer = setTimeout(check, CHECK_EVERY_MS);
  };
  check();
  return {
    done,
    stop() {
      clearTimeout(timer);
      finish();
    },
  };
}
