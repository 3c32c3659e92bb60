// Client connections are a resource with limits: a cap per listener (over it, new connections are
// refused at accept, before any byte is read), an idle timeout for connections that carry no byte
// either way (blind tunnels, intercepted tunnels, spliced upgrades, kept-alive HTTP), and the
// readiness those imply: a proxy at its cap, out of file descriptors or not listening cannot
// take work, and says so on /readyz.

// node:net's Server: HTTP listeners and the transparent listener (a plain TCP server) alike.
import type { Server, Socket } from 'node:net';
import type { Logger } from '../../core/logger.ts';

interface Tracked {
  /** bytesRead + bytesWritten at the last sweep that saw a change. */
  bytes: number;
  /** When `bytes` last changed. */
  at: number;
}

/**
 * Closes connections with no traffic for `idleMs`. A sweep every quarter of the timeout compares
 * each socket's byte counters, rather than socket.setTimeout, which node:http also sets (keep-alive)
 * and would overwrite. `busy` exempts a connection with an exchange in flight: waiting for an
 * upstream's answer is not idleness (responseTimeoutMs bounds that wait).
 */
export class IdleSweeper {
  private readonly tracked = new Map<Socket, Tracked>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly idleMs: number,
    private readonly busy: (socket: Socket) => boolean,
    private readonly now: () => number = Date.now,
  ) {
    this.timer = setInterval(() => this.sweep(), Math.max(25, Math.floor(idleMs / 4)));
    this.timer.unref();
  }

  track(socket: Socket): void {
    if (this.tracked.has(socket)) return;
    this.tracked.set(socket, { bytes: socket.bytesRead + socket.bytesWritten, at: this.now() });
    socket.once('close', () => this.tracked.delete(socket));
  }

  sweep(): void {
    const now = this.now();
    for (const [socket, t] of this.tracked) {
      const bytes = socket.bytesRead + socket.bytesWritten;
      if (bytes !== t.bytes || this.busy(socket)) {
        t.bytes = bytes;
        t.at = now;
      } else if (now - t.at >= this.idleMs) {
        this.tracked.delete(socket);
        socket.destroy();
      }
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.tracked.clear();
  }
}

interface ListenerState {
  readonly name: string;
  readonly max: number;
  connections: number;
  listening: boolean;
}

/** Whether a failed dial (or accept) failed for want of a file descriptor. */
export function isDescriptorShortage(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return code === 'EMFILE' || code === 'ENFILE';
}

/** How long after a descriptor shortage (EMFILE/ENFILE) the proxy reports itself not ready. */
const EXHAUSTED_MS = 5000;
/** At most one "connection refused" warning per listener in this window. */
const WARN_EVERY_MS = 10_000;

/** Connection caps and readiness across every listener of the proxy. */
export class ConnectionLimits {
  private readonly listeners = new Map<Server, ListenerState>();
  private readonly counted = new WeakSet<Socket>();
  private exhaustedAt = -Infinity;

  constructor(
    private readonly logger: Logger,
    private readonly sweeper: IdleSweeper,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Caps `server` at `max` concurrent connections (node:net closes new ones at accept: the
   * client sees the connection closed, nothing is read) and watches its accept errors.
   */
  guard(server: Server, name: string, max: number): void {
    const state: ListenerState = { name, max, connections: 0, listening: false };
    this.listeners.set(server, state);
    server.maxConnections = max;
    server.on('listening', () => (state.listening = true));
    server.on('close', () => (state.listening = false));
    server.on('connection', (socket: Socket) => {
      // h2c replays emit 'connection' again for a socket already counted.
      if (this.counted.has(socket)) return;
      this.counted.add(socket);
      state.connections++;
      socket.once('close', () => state.connections--);
      this.sweeper.track(socket);
    });
    let warnedAt = -Infinity;
    server.on('drop', () => {
      const now = this.now();
      if (now - warnedAt < WARN_EVERY_MS) return;
      warnedAt = now;
      this.logger.warn({ listener: name, maxConnections: max }, 'proxy: connection refused, the listener is at its maxConnections');
    });
    // After listen, an accept error is emitted here; unhandled, it would end the process. libuv
    // absorbs most descriptor shortages at accept itself (it accepts the connection with a spare
    // descriptor and closes it at once, emitting nothing): EMFILE/ENFILE arrive here only when it
    // had no spare. The shortage is mostly seen when a dial to an upstream fails (exhausted()).
    server.on('error', (err: NodeJS.ErrnoException) => {
      if (!state.listening) return; // listen errors are the starter's to report
      if (isDescriptorShortage(err)) this.exhaustedAt = this.now();
      this.logger.error({ listener: name, code: err.code }, 'proxy: listener error');
    });
  }

  /** Records a descriptor shortage seen elsewhere (an upstream connection that failed with EMFILE). */
  exhausted(): void {
    this.exhaustedAt = this.now();
  }

  /** Why the proxy cannot take work, or undefined when it can. */
  notReadyReason(): string | undefined {
    if (this.now() - this.exhaustedAt < EXHAUSTED_MS) return 'out of file descriptors';
    for (const s of this.listeners.values()) {
      if (!s.listening) return `${s.name} is not listening`;
      if (s.connections >= s.max) return `${s.name} is at its maxConnections (${s.max})`;
    }
    return undefined;
  }

  /** Connections per listener name, for logs and tests. */
  load(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.listeners.values()) out[s.name] = (out[s.name] ?? 0) + s.connections;
    return out;
  }
}
