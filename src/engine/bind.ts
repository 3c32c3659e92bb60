// Binds a compiled manifest to one request: picks each field's rule for the job type and context,
// binds its technique to the request's keys, and wraps it so codecs never see a failure: a value
// that cannot be protected is recorded (location and reason) and replaced by a stand-in.

import { DpgError, type ValueFailure } from '../core/errors.ts';
import { safeLocation } from '../core/safe-name.ts';
import { REVERSE_OF, type ForwardJobType, type JobSpec, type ProtectSummary, type Scalar } from '../core/types.ts';
import type { FieldAction, FieldResolver } from '../formats/codec.ts';
import type { CompiledField, CompiledManifest, CompiledRule } from '../manifest/compile.ts';
import { normalizeName } from '../manifest/selectors.ts';
import { ValueError, type BoundTechnique, type FieldKeys } from '../techniques/technique.ts';
import { detectedScheme, type KindScheme } from '../techniques/pseudonymise/detected/schemes.ts';
import { scopeOf, type KeyService } from './keys.ts';
import { ContentFieldAction, type BoundKind, type ContentMode } from './content-action.ts';
import type { DetectKind } from '../detect/kinds.ts';
import type { PreparedJob } from './types.ts';
import { countDetected, countTechnique } from './tally.ts';

/** Failures listed in a response or error; more are counted but not listed. */
const MAX_LISTED_FAILURES = 100;
/** Different hint sentences kept per request (they repeat per key, not per value). */
const MAX_HINTS = 3;

export interface BindLimits {
  readonly maxValueLength: number;
}

/** Mutable bookkeeping of one request. */
export class RunState {
  readonly summary: ProtectSummary = { protected: 0, failed: 0, failures: [] };
  /** Sentences explaining failures (a likely wrong keyring), for the error detail; a few at most. */
  readonly hints = new Set<string>();
  readonly protectNull: boolean;
  readonly standIn: string;
  /** Detected values protected (or restored) per kind, for the metrics (tally.ts); made on first use. */
  detected: Map<DetectKind, number> | undefined;

  constructor(
    readonly job: JobSpec,
    readonly limits: BindLimits,
  ) {
    const ctx = job.context;
    this.protectNull = ctx.protectNullValues === true;
    this.standIn = ctx.useRestrictedText ? (ctx.restrictedText ?? '') : '';
  }

  /** One detected value of `kind` was protected or restored. */
  detectedDone(kind: DetectKind): void {
    this.summary.protected++;
    const counts = (this.detected ??= new Map());
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }

  /**
   * Where the counts stand, to settle a text whose spans were protected more than once (merged
   * readings, round after round): `settleDetected` then counts each final span once.
   */
  detectedMark(): { readonly protected: number; readonly detected: ReadonlyMap<DetectKind, number> | undefined } {
    return { protected: this.summary.protected, detected: this.detected === undefined ? undefined : new Map(this.detected) };
  }

  settleDetected(mark: ReturnType<RunState['detectedMark']>, kinds: Iterable<DetectKind>): void {
    this.summary.protected = mark.protected;
    this.detected = mark.detected === undefined ? undefined : new Map(mark.detected);
    for (const kind of kinds) this.detectedDone(kind);
  }

  fail(location: string | (() => string), reason: string, hint?: string): string {
    this.summary.failed++;
    if (hint !== undefined && this.hints.size < MAX_HINTS) this.hints.add(hint);
    if (this.summary.failures.length < MAX_LISTED_FAILURES) {
      // Codecs build locations from indexes and plain names only; this is the last check before a
      // location reaches a response or a log, for builders outside the codecs (proxy forms).
      this.summary.failures.push({ location: safeLocation(typeof location === 'string' ? location : location()), reason });
    }
    return this.standIn;
  }
}

function isEmpty(value: unknown): boolean {
  return value === null || value === undefined || value === '';
}

/** One field's action within a request. */
class BoundFieldAction implements FieldAction {
  /** Values this field's rule protected in the request (for the metrics, tally.ts). */
  count = 0;

  constructor(
    readonly techniqueId: string,
    private readonly run: RunState,
    private readonly fn: (value: Scalar) => Scalar,
    private readonly batchFn: ((values: readonly Scalar[]) => (Scalar | ValueError)[]) | undefined,
    private readonly removesField: boolean,
  ) {}

  removes(value: unknown): boolean {
    if (!this.removesField) return false;
    if (isEmpty(value) && !this.run.protectNull) return false;
    this.run.summary.protected++;
    this.count++;
    return true;
  }

  apply(value: Scalar, location: string | (() => string)): Scalar {
    const run = this.run;
    if (this.removesField) return value;
    if (isEmpty(value) && !run.protectNull) return value;
    if (typeof value === 'string' && value.length > run.limits.maxValueLength) return run.fail(location, 'VALUE_TOO_LONG');
    try {
      const out = this.fn(value);
      run.summary.protected++;
      this.count++;
      return out;
    } catch (err) {
      if (err instanceof ValueError) return run.fail(location, err.reason, err.hint);
      throw err;
    }
  }

  applyBatch(values: Scalar[], location: (index: number) => string): Scalar[] {
    const run = this.run;
    const out = values.slice();
    if (this.removesField) return out;
    // Values that pass through unchanged or fail early stay out of the technique call.
    const idx: number[] = [];
    const todo: Scalar[] = [];
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!;
      if ((v === null || v === '') && !run.protectNull) continue;
      if (typeof v === 'string' && v.length > run.limits.maxValueLength) {
        out[i] = run.fail(location(i), 'VALUE_TOO_LONG');
        continue;
      }
      idx.push(i);
      todo.push(v);
    }
    if (todo.length === 0) return out;
    const results = this.batchFn ? this.batchFn(todo) : this.applyEach(todo);
    let done = 0;
    for (let k = 0; k < idx.length; k++) {
      const r = results[k]!;
      const i = idx[k]!;
      if (r instanceof ValueError) out[i] = run.fail(location(i), r.reason, r.hint);
      else {
        out[i] = r;
        done++;
      }
    }
    run.summary.protected += done;
    this.count += done;
    return out;
  }

  /** The per-value technique over a batch, failures as ValueError entries like a batched one. */
  private applyEach(values: readonly Scalar[]): (Scalar | ValueError)[] {
    const fn = this.fn;
    const results: (Scalar | ValueError)[] = new Array(values.length);
    for (let k = 0; k < values.length; k++) {
      try {
        results[k] = fn(values[k]!);
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
        results[k] = err;
      }
    }
    return results;
  }
}

export interface BindDeps {
  readonly keys: KeyService;
  readonly limits: BindLimits;
  readonly now: () => Date;
}

/** A prepared job: the resolver codecs use, plus the end-of-request check. */
export function bindJob(manifest: CompiledManifest, job: JobSpec, deps: BindDeps): PreparedJob {
  if (!manifest.jobTypes.has(job.jobType)) {
    throw new DpgError('JOB_TYPE_NOT_DEFINED', `Manifest ${manifest.name} defines no rules for job type ${job.jobType}`);
  }
  const reverse = job.jobType === 'Reconstruct' || job.jobType === 'Decrypt';
  const ruleJob: ForwardJobType = reverse ? REVERSE_OF[job.jobType as keyof typeof REVERSE_OF] : (job.jobType as ForwardJobType);
  const run = new RunState(job, deps.limits);
  const ctx = job.context;
  const scope = scopeOf(ctx);
  // New data always takes the key version active now; only the reverse jobs may look back.
  const at = reverse ? (ctx.snapshotDate ?? deps.now()) : deps.now();
  const bound = new Map<CompiledField, FieldAction | null>();

  /** The field's rule for this job type and context, bound to the request's keys. */
  const bindRule = (field: CompiledField): BoundRule | undefined => {
    const rule = pickRule(field.rules.get(ruleJob), ctx);
    if (!rule) return undefined;
    const keys = deps.keys.fieldKeys(manifest.keyId, manifest.name, field.id, scope, at, !reverse);
    const technique = rule.compiled.bind({
      keys,
      preserveStringLength: ctx.preserveStringLength === true,
      restrictedText: ctx.useRestrictedText ? (ctx.restrictedText ?? '') : undefined,
    });
    return { rule, technique, keys };
  };

  const bindField = (field: CompiledField): FieldAction | null => {
    let action = bound.get(field);
    if (action !== undefined) return action;
    const ruled = bindRule(field);
    action = ruled ? makeAction(run, ruled.technique, ruled.rule, reverse) : null;
    bound.set(field, action);
    return action;
  };

  // Fields no selector claims get the content action, built on first use.
  let content: ContentFieldAction | null | undefined;
  const contentAction = (): ContentFieldAction | null => {
    if (content === undefined) content = bindContent(manifest, job, run, bindRule);
    return content;
  };

  // Per raw name: a field whose name itself holds a detected value is removed whatever selects it
  // (docs/detection.md); else the named field's action, else the content action.
  const byRawName = new Map<string, FieldAction | null>();
  const personalNames = new Set<FieldAction>();
  const resolver: FieldResolver = {
    usesPaths: manifest.byPath.size > 0,
    resolve(name: string, path?: string): FieldAction | undefined {
      let action = byRawName.get(name);
      if (action === undefined) {
        const personal = contentAction()?.personalName(name);
        if (personal !== undefined) {
          action = personal;
          personalNames.add(personal);
        } else {
          const field = manifest.byName.get(normalizeName(name));
          action = field ? bindField(field) : contentAction();
        }
        byRawName.set(name, action);
      }
      if (path !== undefined && manifest.byPath.size > 0 && (action === null || !personalNames.has(action))) {
        const field = manifest.byPath.match(path);
        if (field) return bindField(field) ?? undefined;
      }
      return action ?? undefined;
    },
    contentAction: () => contentAction() ?? undefined,
  };

  let tallied = false;
  /** The request's counts go to the thread's tally once, when it succeeds. */
  const tally = (): void => {
    if (tallied) return;
    tallied = true;
    for (const action of bound.values()) if (action instanceof BoundFieldAction) countTechnique(job.jobType, action.techniqueId, action.count);
    if (run.detected === undefined) return;
    for (const [kind, n] of run.detected) {
      countDetected(job.jobType, kind, n);
      const technique = content?.techniqueOf(kind);
      if (technique !== undefined) countTechnique(job.jobType, technique, n);
    }
  };

  return {
    job,
    resolver,
    finish: () => {
      if (run.summary.failed > 0 && ctx.silentMode !== true) throw notProtectable(run);
      tally();
      return run.summary;
    },
    check: () => {
      if (run.summary.failed > 0 && ctx.silentMode !== true) throw notProtectable(run);
    },
  };
}

/** The content-detection action of a request, or null when the manifest detects nothing for this job. */
function bindContent(
  manifest: CompiledManifest,
  job: JobSpec,
  run: RunState,
  bindRule: (field: CompiledField) => BoundRule | undefined,
): ContentFieldAction | null {
  const detection = manifest.detection;
  if (!detection) return null;
  const ruleJob: ForwardJobType = job.jobType === 'Reconstruct' ? 'Pseudonymise' : job.jobType === 'Decrypt' ? 'Encrypt' : (job.jobType as ForwardJobType);
  const scanner = detection.scanners.get(ruleJob);
  if (!scanner) return null;
  const kinds = new Map<DetectKind, BoundKind>();
  for (const kind of scanner.kinds) {
    const field = detection.byKind.get(kind)!;
    const rule = pickRule(field.rules.get(ruleJob), job.context);
    if (!rule) continue;
    kinds.set(kind, new LazyKind(kind, rule.technique.id, rule.technique.removesField, () => bindRule(field)!, detection.phoneRegions));
  }
  if (kinds.size === 0) return null;
  const mode: ContentMode =
    job.jobType === 'Reconstruct' ? 'reconstruct' : job.jobType === 'Decrypt' ? 'decrypt' : job.jobType === 'Pseudonymise' ? 'pseudonymise' : 'forward';
  return new ContentFieldAction(run, scanner, detection.inText, kinds, mode);
}

function pickRule(rules: readonly CompiledRule[] | undefined, ctx: JobSpec['context']): CompiledRule | undefined {
  if (!rules) return undefined;
  for (const r of rules) if (!r.when || r.when(ctx)) return r;
  return undefined;
}

function makeAction(run: RunState, technique: BoundTechnique, rule: CompiledRule, reverse: boolean): FieldAction | null {
  if (reverse) {
    // Reconstruct/Decrypt run the forward rule backwards; a removed or irreversible field has nothing to undo.
    if (rule.technique.removesField || !rule.technique.reversible || !technique.inverse) return null;
    const inverse = technique.inverse.bind(technique);
    return new BoundFieldAction(rule.technique.id, run, inverse, technique.inverseBatch?.bind(technique), false);
  }
  return new BoundFieldAction(rule.technique.id, run, technique.forward.bind(technique), technique.forwardBatch?.bind(technique), rule.technique.removesField);
}

function notProtectable(run: RunState): DpgError {
  const errors: ValueFailure[] = run.summary.failures;
  const more = run.summary.failed - errors.length;
  return new DpgError(
    'VALUE_NOT_PROTECTABLE',
    `${run.summary.failed} value(s) could not be processed${more > 0 ? ` (first ${errors.length} listed)` : ''}${[...run.hints].map((h) => `; ${h}`).join('')}`,
    { errors },
  );
}

/**
 * A detected kind whose technique is bound on first use (binding FPE prepares ciphers; most
 * requests meet few kinds). A class, not an object literal with a getter: V8 kept those literals
 * (one per kind per request) alive through young-generation collections, so each request's
 * binding ended up in old space — 3-5 ms scavenges, +6 to +12 ms on the proxy's p99 with the
 * `customer` manifest, against +1 ms with this class (docs/performance.md, 2026-11-22).
 */
class LazyKind implements BoundKind {
  private bound: BoundRule | undefined;
  private kindScheme: KindScheme | undefined;

  constructor(
    readonly kind: DetectKind,
    readonly techniqueId: string,
    readonly removes: boolean,
    private readonly bind: () => BoundRule,
    /** detect.phoneRegions: the plans the phone scheme places national writings in. */
    private readonly phoneRegions: readonly string[],
  ) {}

  get technique(): BoundTechnique {
    return (this.bound ??= this.bind()).technique;
  }

  /** Pseudonymise/Reconstruct of an FPE rule: the kind's scheme, valid by construction (detected/schemes.ts). */
  get scheme(): KindScheme | undefined {
    if (this.kindScheme === undefined) {
      const bound = (this.bound ??= this.bind());
      if (!bound.rule.technique.id.startsWith('fpe-') || bound.technique.inverse === undefined) return undefined;
      this.kindScheme = detectedScheme(this.kind, bound.keys, bound.technique, bound.rule.compiled.detected, this.phoneRegions);
    }
    return this.kindScheme;
  }
}

/** A field's rule for a request, bound to its keys. */
interface BoundRule {
  readonly rule: CompiledRule;
  readonly technique: BoundTechnique;
  readonly keys: FieldKeys;
}
