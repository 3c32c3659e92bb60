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

export function audit(logger: Logger, record: AuditRecord): void {
  logger.info({ audit: true, ...record }, 'request');
}
