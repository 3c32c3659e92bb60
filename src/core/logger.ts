// The process logger: pino JSON lines. Callers log names, counts and ids — never payload values,
// secrets, keys or tokens; the redact list is a second line of defence for header-shaped objects.

import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  'headers["x-resource-token"]',
  'headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-resource-token"]',
  'req.headers["x-api-key"]',
  'client_secret',
  'access_token',
];

export interface LoggerOptions {
  readonly level?: string;
  /** Where lines go (tests capture them to scan for leaks); default stdout, see `bufferBytes`. */
  readonly destination?: DestinationStream;
  /**
   * Stdout's reader is never waited for: lines wait in a buffer of at most this many bytes
   * (default 8 MiB, logging.bufferBytes), and lines beyond it are dropped and counted.
   */
  readonly bufferBytes?: number;
}

const DEFAULT_BUFFER_BYTES = 8 * 1024 * 1024;

/** How long an exiting process waits for a stalled stdout reader before it gives up its last lines. */
const EXIT_FLUSH_MS = 2000;

let droppedLines = 0;

/** Log lines dropped in this process because stdout's reader was slower than the log (a counter). */
export function droppedLogLines(): number {
  return droppedLines;
}

/**
 * Stdout for a long-running gateway. pino's default stdout writes in the background with a buffer
 * that has no bound: when the pipe's reader (the container runtime, a log shipper, a bench) falls
 * behind, the buffer (and memory) grows with the request rate, and the
 * gateway slowed with it (measured: 6,000 API requests with stdout unread took 76 s instead of 11 s,
 * single requests waiting 460 ms; bounded: 13 s, 129 ms at worst). Here past the bound lines are
 * dropped whole, counted, and a warning with the count is logged once the reader has caught up. A
 * dropped audit line is the lesser harm: the metrics still count every request.
 */
function stdoutThatNeverWaits(bufferBytes: number, warn: (dropped: number) => void): DestinationStream {
  let exitingSince = 0;
  // Registered before pino.destination registers its own exit flush, so it runs first: pino's then
  // finds nothing left (or a destroyed stream), and a flush that gives up cannot turn a clean exit
  // into an exception.
  process.once('exit', () => {
    exitingSince = Date.now();
    try {
      stream.flushSync();
    } catch {
      stream.destroy();
    }
  });
  const stream = pino.destination({
    dest: 1,
    sync: false,
    maxLength: bufferBytes,
    // While running, a full pipe is retried in the background (no wait on the loop); at exit the
    // flush is synchronous, and a reader that stays stalled must not keep the process from ending.
    retryEAGAIN: () => exitingSince === 0 || Date.now() - exitingSince < EXIT_FLUSH_MS,
  });
  let unreported = 0;
  stream.on('drop', () => {
    droppedLines++;
    unreported++;
  });
  stream.on('drain', () => {
    if (unreported === 0) return;
    const n = unreported;
    unreported = 0;
    warn(n);
  });
  return stream;
}

/**
 * pino's isoTime, formatted once per millisecond: under load many lines (one audit line per
 * request) share a millisecond, and Date#toISOString was a visible per-request cost.
 */
let lastTimeMs = Number.NaN;
let lastTimeField = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== lastTimeMs) {
    lastTimeMs = now;
    lastTimeField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTimeField;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.DPG_LOG_LEVEL ?? 'info';
  const opts = {
    level,
    base: { service: 'dpg' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: isoTime,
  };
  if (options.destination) return pino(opts, options.destination);
  let logger: Logger | undefined;
  const destination = stdoutThatNeverWaits(options.bufferBytes ?? DEFAULT_BUFFER_BYTES, (dropped) =>
    logger?.warn({ droppedLines: dropped }, 'logging: lines dropped while stdout was not read fast enough'),
  );
  logger = pino(opts, destination);
  return logger;
}
