// Reads one manifest YAML file into a ManifestDef, collecting every problem with its line. Shapes,
// types and keys are checked against schema/manifest.schema.json (the schema editors use); this file
// checks what the schema cannot say: names compared the way requests compare them (selected twice,
// kinds in any letter case, phone regions), job-type gaps, Restrict/Keep words, and technique
// options, which each technique validates itself, once, so nothing is re-checked per request.

import { FORWARD_JOB_TYPES, REVERSE_OF, parseJobType, type ForwardJobType } from '../core/types.ts';
import type { ConfigProblem } from '../core/errors.ts';
import { readYamlFile, parseYaml, type YamlValue, type ParsedYaml } from '../core/yaml-reader.ts';
import { checkAgainstSchema, plainForSchema } from '../core/schema-problems.ts';
import validateManifest, { schema as manifestSchema } from './manifest-schema.generated.js';
import { techniqueFor, techniques } from '../techniques/registry.ts';
import { TechniqueOptionError } from '../techniques/technique.ts';
import { DETECT_KINDS, parseDetectKind, type DetectKind } from '../detect/kinds.ts';
import { unknownPhoneRegions } from '../detect/phone-regions.ts';
import type { ConditionDef, DetectDef, FieldDef, ManifestDef, OverrideDef, RuleDef, RuleSet, SelectorDef } from './definition.ts';
import { findGaps } from './gaps.ts';
import { normalizeName } from './selectors.ts';

const MANIFEST_KEYS = ['name', 'description', 'keyId', 'fields', 'strict', 'detect'] as const;
const FIELD_KEYS = ['match', 'path', 'kind', 'keyName', 'when', ...FORWARD_JOB_TYPES] as const;
const DETECT_KEYS = ['kinds', 'inText', 'phoneRegions', 'base64'] as const;
/** The rule text that leaves a field in clear for a job type on purpose (no gap warning). */
const KEEP = 'keep';
const OVERRIDE_KEYS = ['if', ...FORWARD_JOB_TYPES] as const;
const CONDITION_KEYS = ['countryCode', 'dataOwningCountryCode', 'crossBorder', 'thirdPartyId', 'dataUsageId', 'claims'] as const;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const COUNTRY = /^[A-Z]{2}$/;
/** The keys read here; the schema refuses any other (so no unknown-key check here). */
const QUIET = { unknownKeys: false } as const;

export interface ParseResult {
  readonly manifest?: ManifestDef;
  readonly problems: readonly ConfigProblem[];
}

export function parseManifestFile(file: string): ParseResult {
  return fromParsed(readYamlFile(file), file);
}

export function parseManifestText(text: string, file: string): ParseResult {
  return fromParsed(parseYaml(text, file), file);
}

function fromParsed({ root, sink }: ParsedYaml, file: string): ParseResult {
  if (sink.problems.length > 0) return { problems: sink.problems };
  if (!root.present) {
    root.problem('the manifest is empty');
    return { problems: sink.problems };
  }
  const flagged = checkAgainstSchema(validateManifest, manifestSchema, plainForSchema(root.node), root.node, sink);
  const schemaProblems = sink.problems.length;
  if (!root.isMap()) return { problems: sink.problems };
  const f = root.fields(MANIFEST_KEYS, QUIET);
  const name = f.name.present ? f.name.string() : undefined;
  const description = f.description.present ? f.description.string() : undefined;
  const keyId = f.keyId.present ? f.keyId.string() : undefined;
  const fields: FieldDef[] = [];
  if (f.fields.isSeq()) {
    for (const item of f.fields.items()) {
      const field = item.isMap() ? parseField(item) : undefined;
      if (field) fields.push(field);
    }
  }
  checkDuplicateSelectors(fields, root);
  const strict = f.strict.present ? f.strict.boolean() : undefined;
  const detect = f.detect.present ? parseDetect(f.detect) : undefined;
  checkDetectedKinds(fields, detect, f.detect.present ? f.detect : root);
  // What the schema found wrong is said once: a check here that reads the same value again is quiet.
  const own = sink.problems.splice(schemaProblems).filter((p) => !isUnder(p.path, flagged));
  sink.problems.push(...own);
  const gaps = findGaps(fields, file);
  // Strict manifests refuse a job type that leaves in clear what another protects.
  if (strict === true) sink.problems.push(...gaps);
  if (sink.problems.length > 0 || name === undefined) return { problems: sink.problems };
  return { manifest: { name, description, keyId, fields, file, detect, strict, warnings: [...(strict === true ? [] : gaps), ...implicitKeyNameWarnings(fields, file)] }, problems: [] };
}

/** `detect: [card, email]` or `detect: { kinds: [...], inText: false, phoneRegions: [DE, FR], base64: true }`. */
function parseDetect(v: YamlValue): DetectDef | undefined {
  let kindsValue = v;
  let inText = true;
  let phoneRegions: string[] = [];
  let base64 = false;
  if (v.isMap()) {
    const d = v.fields(DETECT_KEYS, QUIET);
    if (!d.kinds.present) return undefined;
    kindsValue = d.kinds;
    if (d.inText.present) inText = d.inText.boolean() ?? true;
    if (d.phoneRegions.present) phoneRegions = parsePhoneRegions(d.phoneRegions);
    if (d.base64.present) base64 = d.base64.boolean() ?? false;
  } else if (!v.isSeq()) return undefined;
  const kinds: DetectKind[] = [];
  for (const item of kindsValue.items()) {
    const kind = readKind(item);
    if (kind === undefined) continue;
    if (kinds.includes(kind)) item.problem(`${kind} is listed twice`);
    else kinds.push(kind);
  }
  if (kinds.length === 0 && kindsValue.isSeq()) return kindsValue.problem('must list at least one kind');
  return { kinds, inText, phoneRegions, base64, line: v.line };
}

/** `phoneRegions: [DE, FR]`: ISO 3166 region codes libphonenumber-js knows, each once. */
function parsePhoneRegions(v: YamlValue): string[] {
  if (!v.isSeq()) return [];
  const out: string[] = [];
  for (const item of v.items()) {
    const text = item.string();
    if (text === undefined) continue;
    const region = text.toUpperCase();
    if (unknownPhoneRegions([region]).length > 0) item.problem('unknown phone region (expected an ISO 3166 code such as DE, FR, GB)');
    else if (out.includes(region)) item.problem(`${region} is listed twice`);
    else out.push(region);
  }
  return out;
}

function readKind(v: YamlValue): DetectKind | undefined {
  const text = v.string();
  if (text === undefined) return undefined;
  const kind = parseDetectKind(text);
  if (kind === undefined) return v.problem(`unknown kind (expected one of: ${DETECT_KINDS.join(', ')})`);
  return kind;
}

/** Every detected kind has exactly one field giving its rules, and every declared kind is detected. */
function checkDetectedKinds(fields: readonly FieldDef[], detect: DetectDef | undefined, at: YamlValue): void {
  const sink = at.sink;
  const declared = new Map<DetectKind, FieldDef>();
  for (const field of fields) {
    if (field.detects === undefined) continue;
    const first = declared.get(field.detects);
    if (first) {
      sink.problems.push({ file: sink.file, line: field.line, message: `kind ${field.detects} is given to two fields${first.line ? ` (first at line ${first.line})` : ''}` });
      continue;
    }
    declared.set(field.detects, field);
    if (!detect?.kinds.includes(field.detects)) {
      sink.problems.push({ file: sink.file, line: field.line, message: `kind ${field.detects} is not listed under \`detect\`: add it there, or remove \`kind\`` });
    }
  }
  for (const kind of detect?.kinds ?? []) {
    if (!declared.has(kind)) at.problem(`detects ${kind} but no field has \`kind: ${kind}\` to say how it is protected`);
  }
}

function parseField(v: YamlValue): FieldDef | undefined {
  const f = v.fields(FIELD_KEYS, QUIET);
  let selector: SelectorDef | undefined;
  const detects = f.kind.present ? readKind(f.kind) : undefined;
  if (f.match.present && f.path.present) f.path.problem('use either `match` or `path`, not both');
  else if (f.match.present) {
    const names = f.match.isSeq() ? f.match.items().map((i) => i.string()) : [f.match.string()];
    const clean = names.filter((n): n is string => n !== undefined && n !== '');
    if (clean.length === 0) f.match.problem('must name at least one field');
    else selector = { kind: 'name', names: clean };
  } else if (f.path.present) {
    const path = f.path.string();
    if (path !== undefined) {
      if (path === '') f.path.problem('must not be empty');
      else selector = { kind: 'path', path };
    }
  } else if (detects !== undefined) selector = { kind: 'detected', detected: detects };
  else if (!f.kind.present) v.problem('needs `match` (field name), `path` (exact path) or `kind` (detected by content)');

  const keep = FORWARD_JOB_TYPES.filter((job) => isKeep(f[job]));
  const rules = parseRules(f, true);
  const when: OverrideDef[] = [];
  if (f.when.present) {
    for (const item of f.when.items()) {
      if (!item.isMap()) continue;
      const o = item.fields(OVERRIDE_KEYS, QUIET);
      if (!o.if.isMap()) continue;
      const condition = parseCondition(o.if);
      const overrideRules = parseRules(o, false);
      if (Object.keys(overrideRules).length === 0) item.problem('names no job type to override');
      if (condition) when.push({ condition, rules: overrideRules, line: item.line });
    }
  }
  if (Object.keys(rules).length === 0 && when.length === 0) {
    v.problem(`defines no rule: add one of ${FORWARD_JOB_TYPES.join(', ')}`);
  }
  if (selector?.kind === 'detected' && when.length > 0) {
    v.problem('a field with only `kind` cannot have `when` overrides: put them on a named field that has `kind`');
  }
  for (const rev of Object.keys(REVERSE_OF)) {
    // Reverse job types are not written: they run the forward rules backwards.
    if (v.entries().some(([k]) => k === rev)) v.problem(`${rev} is derived from ${REVERSE_OF[rev as keyof typeof REVERSE_OF]} rules`);
  }
  const keyName = f.keyName.present && NAME.test(String(f.keyName.scalarValue())) ? f.keyName.string() : undefined;
  if (!selector) return undefined;
  return { selector, rules, when, line: v.line, detects, keep, ...(keyName === undefined ? {} : { keyName }) };
}

/**
 * A field matched by several names whose keys still come from the first of them: reordering the
 * list would silently change every pseudonym and hash of the field. `keyName` pins it.
 */
function implicitKeyNameWarnings(fields: readonly FieldDef[], file: string): ConfigProblem[] {
  const warnings: ConfigProblem[] = [];
  for (const field of fields) {
    if (field.keyName !== undefined || field.selector.kind !== 'name' || field.selector.names.length < 2) continue;
    warnings.push({
      file,
      ...(field.line === undefined ? {} : { line: field.line }),
      message: `field ${field.selector.names.join(', ')}: its keys derive from the first name (${field.selector.names[0]}); add keyName: ${field.selector.names[0]} so reordering the names cannot change its pseudonyms`,
    });
  }
  return warnings;
}

function isKeep(v: YamlValue | undefined): boolean {
  const scalar = v?.node === undefined ? undefined : v.scalarValue();
  return typeof scalar === 'string' && scalar.toLowerCase() === KEEP;
}

/** `allowKeep`: a field's own rules may say `Keep`; conditional overrides may not. */
function parseRules(f: Partial<Record<string, YamlValue>>, allowKeep: boolean): RuleSet {
  const rules: RuleSet = {};
  for (const job of FORWARD_JOB_TYPES) {
    const value = f[job];
    if (!value || value.node === undefined) continue;
    if (isKeep(value)) {
      if (!allowKeep) value.problem('`Keep` is for a field\'s own rules, not for `when` overrides');
      continue;
    }
    const rule = parseRule(job, value);
    if (rule) rules[job] = rule;
  }
  return rules;
}

/** `{options}` or empty → the job type's technique; the string `Restrict` (any job type) → remove the field. */
function parseRule(job: ForwardJobType, v: YamlValue): RuleDef | undefined {
  const scalar = v.scalarValue();
  if (typeof scalar === 'string') {
    if (parseJobType(scalar) === 'Restrict') {
      const restrict = techniques.get('restrict');
      if (!restrict) return v.problem('the restrict technique is not registered');
      return { technique: restrict, options: restrict.validate({}), written: 'Restrict' };
    }
    return v.problem('must be an options mapping, "Restrict" to remove the field, or "Keep" to leave it in clear on purpose');
  }
  let options: Record<string, unknown> = {};
  if (v.present) {
    if (!v.isMap()) return undefined;
    options = Object.assign(Object.create(null) as Record<string, unknown>, v.plain() as Record<string, unknown>);
  }
  try {
    const technique = techniqueFor(job, options);
    const validated = technique.validate(options);
    return { technique, options: validated, written: JSON.stringify(options) };
  } catch (err) {
    if (err instanceof TechniqueOptionError) {
      const at = err.path ? ` (${err.path})` : '';
      return v.problem(`${err.message}${at}`);
    }
    throw err;
  }
}

function parseCondition(v: YamlValue): ConditionDef | undefined {
  const f = v.fields(CONDITION_KEYS, QUIET);
  const countries = (x: YamlValue): string[] | undefined => {
    if (!x.present) return undefined;
    const list = (x.isSeq() ? x.items() : [x]).map((i) => i.string());
    if (list.some((c) => c === undefined)) return undefined;
    const upper = (list as string[]).map((c) => c.toUpperCase());
    if (upper.some((c) => !COUNTRY.test(c))) return x.problem('must be ISO 3166-1 alpha-2 country codes') as undefined;
    return upper;
  };
  const ids = (x: YamlValue): number[] | undefined => {
    if (!x.present) return undefined;
    const list = (x.isSeq() ? x.items() : [x]).map((i) => i.number({ integer: true, min: 0, max: 2147483647 }));
    return list.some((n) => n === undefined) ? undefined : (list as number[]);
  };
  let claims: Record<string, string[]> | undefined;
  if (f.claims.present) {
    claims = Object.create(null) as Record<string, string[]>;
    for (const [name, val] of f.claims.entries()) {
      const values = (val.isSeq() ? val.items() : [val]).map((i) => {
        const s = i.scalarValue();
        return typeof s === 'string' || typeof s === 'number' || typeof s === 'boolean' ? String(s) : i.problem('must be a text value');
      });
      if (values.every((x) => x !== undefined)) claims[name.toLowerCase()] = values as string[];
    }
  }
  const crossBorder = f.crossBorder.present ? f.crossBorder.boolean() : undefined;
  const condition: ConditionDef = {
    countryCode: countries(f.countryCode),
    dataOwningCountryCode: countries(f.dataOwningCountryCode),
    crossBorder,
    thirdPartyId: ids(f.thirdPartyId),
    dataUsageId: ids(f.dataUsageId),
    claims,
  };
  if (Object.values(condition).every((x) => x === undefined)) return v.problem('must test at least one of ' + CONDITION_KEYS.join(', '));
  return condition;
}

function checkDuplicateSelectors(fields: readonly FieldDef[], root: YamlValue): void {
  const seen = new Map<string, number | undefined>();
  for (const field of fields) {
    if (field.selector.kind === 'detected') continue; // kinds are checked by checkDetectedKinds
    const keys =
      field.selector.kind === 'name'
        ? field.selector.names.map((n) => `name:${normalizeName(n)}`)
        : [`path:${field.selector.path}`];
    for (const key of keys) {
      if (seen.has(key)) {
        const first = seen.get(key);
        root.sink.problems.push({
          file: root.sink.file,
          line: field.line,
          message: `field ${key.slice(key.indexOf(':') + 1)} is selected twice${first ? ` (first at line ${first})` : ''}`,
        });
      } else seen.set(key, field.line);
    }
  }
}

/** Whether a problem's path is one the schema reported, or lies inside one. */
function isUnder(path: string | undefined, flagged: ReadonlySet<string>): boolean {
  if (path === undefined) return false;
  for (const f of flagged) if (path === f || path.startsWith(`${f}.`) || path.startsWith(`${f}[`)) return true;
  return false;
}
