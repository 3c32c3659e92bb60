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
  /** Where lines go (tests capture them to scan for leaks); default stdout. */
  readonly destination?: DestinationStream;
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

/**
 * Log bytes held in memory while stdout is not read as fast as lines are written (a stalled log
 * collector, a pipe whose reader is busy); lines beyond it are dropped and counted
 * (droppedLogLines), never queued: unbounded, the buffer grew with the request rate until memory
 * ran out under overload (docs/operations.md#overload).
 */
export const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024;
let dropped = 0;

/** Lines the default destination dropped since start because LOG_BUFFER_MAX_BYTES were waiting. */
export function droppedLogLines(): number {
  return dropped;
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
  // pino's default destination (asynchronous writes to fd 1), with a bound on what waits.
  const destination = pino.destination({ dest: 1, sync: false, maxLength: LOG_BUFFER_MAX_BYTES });
  destination.on('drop', () => dropped++);
  return pino(opts, destination);
}
