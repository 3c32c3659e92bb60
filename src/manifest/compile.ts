// Compiles a ManifestDef into the immutable plan the engine runs: techniques compiled once per
// field, conditions turned into predicates, selectors into lookups. Nothing here runs per value.

import { FORWARD_JOB_TYPES, REVERSE_OF, type ForwardJobType, type JobType, type RequestContext } from '../core/types.ts';
import type { ConfigProblem } from '../core/errors.ts';
import type { CompiledTechnique, Technique } from '../techniques/technique.ts';
import { ContentScanner } from '../detect/scanner.ts';
import type { DetectKind } from '../detect/kinds.ts';
import type { ConditionDef, FieldDef, ManifestDef, RuleDef } from './definition.ts';
import { PathMatcher, normalizeName } from './selectors.ts';

export type Condition = (ctx: RequestContext) => boolean;

/** One way a field may be handled for a job type; `when` undefined is the unconditional rule. */
export interface CompiledRule {
  readonly when: Condition | undefined;
  readonly technique: Technique;
  readonly compiled: CompiledTechnique;
}

export interface CompiledField {
  /**
   * Stable id mixed into key derivation: `name:<normalised keyName>`, else (compatibility)
   * `name:<normalised first name>` or `path:<path>`.
   */
  readonly id: string;
  readonly selectorText: string;
  /** Per forward job type, overrides first, the unconditional rule last. */
  readonly rules: ReadonlyMap<ForwardJobType, readonly CompiledRule[]>;
}

export interface CompiledManifest {
  readonly name: string;
  readonly description: string | undefined;
  readonly keyId: string | undefined;
  readonly file: string;
  readonly fields: readonly CompiledField[];
  /** normalised name → field */
  readonly byName: ReadonlyMap<string, CompiledField>;
  readonly byPath: PathMatcher<CompiledField>;
  /** Job types this manifest can run, reverse ones included. */
  readonly jobTypes: ReadonlySet<JobType>;
  /** Detection by content for fields no selector claims; undefined when the manifest has no `detect`. */
  readonly detection: CompiledDetection | undefined;
  /** Job-type gaps found at load (warnings; a strict manifest refuses to load instead). */
  readonly warnings: readonly ConfigProblem[];
  explain(): string[];
}

export interface CompiledDetection {
  /** The field whose rules (and keys) each detected kind takes. */
  readonly byKind: ReadonlyMap<DetectKind, CompiledField>;
  /** Also values inside longer text, not only whole values. */
  readonly inText: boolean;
  /** `detect.phoneRegions`: regions whose national phone writings are detected. */
  readonly phoneRegions: readonly string[];
  /** Per forward job type, a scanner for the kinds that have a rule for it (none: nothing to look for). */
  readonly scanners: ReadonlyMap<ForwardJobType, ContentScanner>;
}

export function compileManifest(def: ManifestDef): CompiledManifest {
  const fields: CompiledField[] = [];
  const byName = new Map<string, CompiledField>();
  const byPath = new PathMatcher<CompiledField>();
  const jobTypes = new Set<JobType>();
  const byKind = new Map<DetectKind, CompiledField>();

  for (const fieldDef of def.fields) {
    const field = compileField(def.name, fieldDef);
    fields.push(field);
    if (fieldDef.selector.kind === 'name') {
      for (const n of fieldDef.selector.names) byName.set(normalizeName(n), field);
    } else if (fieldDef.selector.kind === 'path') byPath.add(fieldDef.selector.path, field);
    if (fieldDef.detects !== undefined) byKind.set(fieldDef.detects, field);
    for (const job of field.rules.keys()) jobTypes.add(job);
  }
  for (const [reverse, forward] of Object.entries(REVERSE_OF)) {
    if (jobTypes.has(forward)) jobTypes.add(reverse as JobType);
  }

  const manifest: CompiledManifest = {
    name: def.name,
    description: def.description,
    keyId: def.keyId,
    file: def.file,
    fields: Object.freeze(fields),
    byName,
    byPath,
    jobTypes,
    detection: def.detect ? compileDetection(byKind, def.detect.inText, def.detect.phoneRegions ?? [], def.detect.base64 === true) : undefined,
    warnings: def.warnings ?? [],
    explain: () => explainManifest(manifest),
  };
  return Object.freeze(manifest);
}

function compileDetection(byKind: ReadonlyMap<DetectKind, CompiledField>, inText: boolean, phoneRegions: readonly string[], base64: boolean): CompiledDetection {
  const scanners = new Map<ForwardJobType, ContentScanner>();
  for (const job of FORWARD_JOB_TYPES) {
    const kinds = [...byKind].filter(([, field]) => field.rules.has(job)).map(([kind]) => kind);
    if (kinds.length > 0) scanners.set(job, new ContentScanner(kinds, { phoneRegions, base64 }));
  }
  return Object.freeze({ byKind, inText, phoneRegions, scanners });
}

function compileField(manifest: string, def: FieldDef): CompiledField {
  const s = def.selector;
  const implicitId = s.kind === 'name' ? `name:${normalizeName(s.names[0]!)}` : s.kind === 'path' ? `path:${s.path}` : `kind:${s.detected.toLowerCase()}`;
  const id = def.keyName !== undefined ? `name:${normalizeName(def.keyName)}` : implicitId;
  const selectorText =
    (s.kind === 'name' ? `match ${s.names.join(', ')}` : s.kind === 'path' ? `path ${s.path}` : `kind ${s.detected}`) +
    (def.detects !== undefined && s.kind !== 'detected' ? ` (kind ${def.detects})` : '') +
    (def.keyName !== undefined ? ` (keyName ${def.keyName})` : '');
  const env = { manifest, field: id };
  const compileRule = (rule: RuleDef, when: Condition | undefined): CompiledRule => ({
    when,
    technique: rule.technique,
    compiled: rule.technique.compile(rule.options, env),
  });
  const rules = new Map<ForwardJobType, CompiledRule[]>();
  for (const job of FORWARD_JOB_TYPES) {
    const list: CompiledRule[] = [];
    for (const override of def.when) {
      const rule = override.rules[job];
      if (rule) list.push(compileRule(rule, compileCondition(override.condition)));
    }
    const base = def.rules[job];
    if (base) list.push(compileRule(base, undefined));
    if (list.length > 0) rules.set(job, list);
  }
  return Object.freeze({ id, selectorText, rules });
}

/** A predicate over the request context; all listed tests must hold. */
export function compileCondition(c: ConditionDef): Condition {
  const tests: Condition[] = [];
  if (c.countryCode) {
    const set = new Set(c.countryCode);
    tests.push((ctx) => ctx.countryCode !== undefined && set.has(ctx.countryCode));
  }
  if (c.dataOwningCountryCode) {
    const set = new Set(c.dataOwningCountryCode);
    tests.push((ctx) => ctx.dataOwningCountryCode !== undefined && set.has(ctx.dataOwningCountryCode));
  }
  if (c.crossBorder !== undefined) {
    const want = c.crossBorder;
    tests.push((ctx) => isCrossBorder(ctx) === want);
  }
  // An id of 0 is "not given" (as in gRPC): a condition listing 0 matches requests without one.
  if (c.thirdPartyId) {
    const set = new Set(c.thirdPartyId);
    tests.push((ctx) => set.has(ctx.thirdPartyId ?? 0));
  }
  if (c.dataUsageId) {
    const set = new Set(c.dataUsageId);
    tests.push((ctx) => set.has(ctx.dataUsageId ?? 0));
  }
  if (c.claims) {
    for (const [name, values] of Object.entries(c.claims)) {
      const accepted = new Set(values);
      tests.push((ctx) => (ctx.claims ?? []).some((cl) => cl.attributeName.toLowerCase() === name && accepted.has(cl.attributeValue)));
    }
  }
  return (ctx) => tests.every((t) => t(ctx));
}

/** Cross-border means both countries are known and differ. */
export function isCrossBorder(ctx: RequestContext): boolean {
  return ctx.countryCode !== undefined && ctx.dataOwningCountryCode !== undefined && ctx.countryCode !== ctx.dataOwningCountryCode;
}

function explainManifest(m: CompiledManifest): string[] {
  const lines = [`manifest ${m.name}${m.description ? ` — ${m.description}` : ''} (${m.file})`];
  lines.push(`  job types: ${[...m.jobTypes].join(', ')}`);
  if (m.detection) {
    lines.push(`  detect ${[...m.detection.byKind.keys()].join(', ')} in unclaimed fields (${m.detection.inText ? 'whole values and inside text' : 'whole values only'})`);
    if (m.detection.phoneRegions.length > 0) lines.push(`  national phone writings of ${m.detection.phoneRegions.join(', ')}`);
    if ([...m.detection.scanners.values()].some((s) => s.base64)) lines.push('  whole values that are base64 text are read decoded');
  }
  for (const f of m.fields) {
    lines.push(`  ${f.selectorText}`);
    for (const [job, rules] of f.rules) {
      for (const r of rules) lines.push(`    ${job}${r.when ? ' (conditional)' : ''}: ${r.compiled.explain()}`);
    }
  }
  return lines;
}
