// One audit line per request, the same shape from every door. Only names, ids, counts and timings:
// the type below has no place for a value, secret or token, on purpose.

import type { Logger } from './logger.ts';
import type { Door } from './metrics.ts';

export interface AuditRecord {
  readonly door: Door;
  readonly requestId: string;
  /** Token subject; undefined for unauthenticated doors (CLI, proxy). */
  readonly clientId?: string;
  readonly manifest?: string;
  readonly jobType?: string;
  readonly dataSetType?: string;
  /** 'ok' or the catalogue error code. */
  readonly outcome: string;
  readonly valuesProtected?: number;
  readonly valuesFailed?: number;
  readonly durationMs: number;
  readonly executionContext?: string;
  readonly apiType?: string;
  /** Proxy route name. */
  readonly route?: string;
}

/**
 * A child logger per process logger with `audit: true` bound once: pino serialises the binding
 * ahead of the record's fields, so the line is byte-for-byte what `{ audit: true, ...record }`
 * gave, without copying the record on every request.
 */
const auditLoggers = new WeakMap<Logger, Logger>();

function auditLoggerOf(logger: Logger): Logger {
  let child = auditLoggers.get(logger);
  // A child keeps the level it was made with; follow the parent if its level changed since.
  if (child === undefined || child.level !== logger.level) {
    child = logger.child({ audit: true });
    auditLoggers.set(logger, child);
  }
  return child;
}

export function audit(logger: Logger, record: AuditRecord): void {
  if (!logger.isLevelEnabled('info')) return;
  auditLoggerOf(logger).info(record, 'request');
}
