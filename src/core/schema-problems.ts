// Turns the errors of a JSON Schema validator (ajv, compiled ahead of time by scripts/schema-build.mjs)
// into problems with file, line and a plain message, by walking the YAML node tree along each
// error's instance path. The schemas in schema/ are the one description of what a config or a
// manifest may contain: editors check files with them, and the loaders through this module.

import { isMap, isScalar, isSeq, type Node as YamlNode } from 'yaml';
import type { ProblemSink } from './yaml-reader.ts';

/** The part of an ajv error this module reads. */
export interface SchemaError {
  readonly instancePath: string;
  readonly schemaPath: string;
  readonly keyword: string;
  readonly params: Record<string, unknown>;
  readonly message?: string;
  /** The schema holding the failed keyword (the validators are built with ajv's `verbose`). */
  readonly parentSchema?: Record<string, unknown>;
  readonly schema?: unknown;
}

export type SchemaValidator = ((data: unknown) => boolean) & { errors?: SchemaError[] | null };

type Schema = Record<string, unknown>;

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  object: 'a mapping',
  array: 'a list',
  null: 'empty',
};

/**
 * The document as plain data for the validator: YAML's `key:` with nothing after it counts as the
 * key left out (as the readers have always taken it), so defaults apply there too.
 */
export function plainForSchema(node: YamlNode | null | undefined): unknown {
  if (node === null || node === undefined) return undefined;
  return dropNulls(node.toJSON());
}

function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropNulls);
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      if (o[k] === null) delete o[k];
      else o[k] = dropNulls(o[k]);
    }
  }
  return value;
}

/**
 * Validates `data` (changed in place: the schema's defaults are filled in) and records each
 * problem in `sink` at its node's line. Returns the paths that have a problem, so hand-written
 * checks can skip them.
 */
export function checkAgainstSchema(validate: SchemaValidator, schema: Schema, data: unknown, root: YamlNode | null | undefined, sink: ProblemSink): Set<string> {
  const flagged = new Set<string>();
  if (validate(data)) return flagged;
  const errors = relevant(validate.errors ?? [], schema);
  const seen = new Set<string>();
  for (const err of errors) {
    const segments = err.instancePath === '' ? [] : err.instancePath.slice(1).split('/').map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
    const at = walk(root, segments);
    let node = at.node;
    let path = pathText(segments);
    let message: string;
    const here = err.parentSchema;
    switch (err.keyword) {
      case 'additionalProperties':
      case 'unevaluatedProperties': {
        const key = String(err.params.additionalProperty ?? err.params.unevaluatedProperty);
        node = walk(root, [...segments, key]).keyNode ?? node;
        path = pathText([...segments, key]);
        message = `unknown key (expected one of: ${allowedKeys(schema, here).join(', ')})`;
        break;
      }
      case 'required': {
        const key = String(err.params.missingProperty);
        path = pathText([...segments, key]);
        const prop = (here?.properties as Record<string, Schema> | undefined)?.[key];
        message = typeof prop?.requiredMessage === 'string' ? prop.requiredMessage : 'is required';
        break;
      }
      case 'type': {
        const value = valueAt(data, segments);
        const wanted = String(err.params.type).split(',');
        message = wanted.includes('integer') && typeof value !== 'number' ? 'must be a number' : `must be ${wanted.map((t) => TYPE_WORDS[t] ?? t).join(' or ')}`;
        break;
      }
      default:
        message = typeof here?.errorMessage === 'string' ? here.errorMessage : plainMessage(err);
    }
    const key = `${path}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    flagged.add(path);
    sink.add(node, path, message);
  }
  return flagged;
}

/**
 * Leaves out what only explains another error: the branches of a failed anyOf (its own message
 * says what is allowed) and the `if` of an if/then (its `then` error is the real one).
 */
function relevant(errors: readonly SchemaError[], root: Schema): SchemaError[] {
  const branches = errors
    .filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf')
    .map((a) => ({ at: a.instancePath, within: reachable(root, a.schema) }));
  return errors.filter((e) => {
    if (e.keyword === 'if') return false;
    const inside = (at: string) => e.instancePath === at || e.instancePath.startsWith(`${at}/`);
    return !branches.some((b) => inside(b.at) && b.within.has(JSON.stringify(e.parentSchema)));
  });
}

/** Every subschema of `s`, following local $refs, as JSON text (the validator holds copies of the schema's objects). */
function reachable(root: Schema, s: unknown, out = new Set<string>()): Set<string> {
  if (s === null || typeof s !== 'object') return out;
  const text = JSON.stringify(s);
  if (!Array.isArray(s)) {
    if (out.has(text)) return out;
    out.add(text);
  }
  const ref = (s as Schema).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/')) reachable(root, schemaAt(root, `${ref}/x`, 1), out);
  for (const v of Object.values(s)) reachable(root, v, out);
  return out;
}

function plainMessage(err: SchemaError): string {
  const p = err.params;
  switch (err.keyword) {
    case 'enum': {
      const values = (p.allowedValues as unknown[]).map(String);
      return values.length <= 3 ? `must be ${values.slice(0, -1).join(', ')}${values.length > 1 ? ' or ' : ''}${values.at(-1)}` : `must be one of ${values.join(', ')}`;
    }
    case 'const':
      return `must be ${String(p.allowedValue)}`;
    case 'minimum':
      return `must be at least ${String(p.limit)}`;
    case 'maximum':
      return `must be at most ${String(p.limit)}`;
    case 'minItems':
      return `must list at least ${String(p.limit)}`;
    default:
      return err.message ?? 'is not valid';
  }
}

/** The subschema an error's schemaPath names, `up` levels above the keyword (refs in the path are followed). */
function schemaAt(schema: Schema, schemaPath: string, up: number): Schema | undefined {
  const parts = schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean);
  let s: unknown = schema;
  for (const part of parts.slice(0, parts.length - up)) {
    s = (s as Record<string, unknown> | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return s as Schema | undefined;
}

/** The keys a mapping may have: its properties and those of the schema it $refs. */
function allowedKeys(root: Schema, s: Schema | undefined): string[] {
  const keys = Object.keys((s?.properties as Schema | undefined) ?? {});
  const ref = s?.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/')) keys.push(...allowedKeys(root, schemaAt(root, `${ref}/x`, 1)));
  return keys;
}

function valueAt(data: unknown, segments: readonly string[]): unknown {
  let v = data;
  for (const s of segments) v = (v as Record<string, unknown> | undefined)?.[s];
  return v;
}

/** `proxy.routes[0].match.host`, the path style problems have always used. */
export function pathText(segments: readonly string[]): string {
  let out = '';
  for (const s of segments) out += /^\d+$/.test(s) ? `[${s}]` : out ? `.${s}` : s;
  return out;
}

/** The YAML node at a path (and, for a mapping entry, the node of its key). */
export function walk(root: YamlNode | null | undefined, segments: readonly string[]): { node: YamlNode | null | undefined; keyNode?: YamlNode } {
  let node = root;
  let keyNode: YamlNode | undefined;
  for (const s of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === s);
      if (!pair) return { node, keyNode: undefined };
      keyNode = pair.key as YamlNode;
      node = (pair.value as YamlNode | null) ?? keyNode;
    } else if (isSeq(node)) {
      const item = node.items[Number(s)] as YamlNode | undefined;
      if (!item) return { node };
      node = item;
      keyNode = undefined;
    } else return { node };
  }
  return { node, keyNode };
}
