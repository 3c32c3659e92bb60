// One audit line per request, the same shape from every door. Only names, ids, counts and timings:
// the type below has no place for a value, secret or token, on purpose. The free-text fields a
// client chooses (an unknown manifest name, executionContext, apiType) are checked once more here,
// whatever the door: one that is not a plain name is replaced, so an e-mail address sent as a
// manifest name never reaches the log.

import type { Logger } from './logger.ts';
import type { Door } from './metrics.ts';
import { WITHHELD } from './safe-name.ts';

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

/**
 * The shape of a manifest name (manifest/parse.ts). Doors pass a name the engine does not know
 * through safeName() already; this catches any door that forgets.
 */
const MANIFEST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** executionContext and apiType: labels such as `nightly-export` or `crm/v2`, never free prose. */
const CONTEXT_LABEL = /^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$/;

function checked(value: string | undefined, shape: RegExp): string | undefined {
  return value === undefined || shape.test(value) ? value : WITHHELD;
}

export function audit(logger: Logger, record: AuditRecord): void {
  if (!logger.isLevelEnabled('info')) return;
  const manifest = checked(record.manifest, MANIFEST_NAME);
  const executionContext = checked(record.executionContext, CONTEXT_LABEL);
  const apiType = checked(record.apiType, CONTEXT_LABEL);
  const clean =
    manifest === record.manifest && executionContext === record.executionContext && apiType === record.apiType
      ? record
      : { ...record, manifest, executionContext, apiType };
  auditLoggerOf(logger).info(clean, 'request');
}
