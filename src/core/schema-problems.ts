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
  const errors = relevant(validate.errors ?? [], schema, data);
  const seen = new Set<string>();
  for (const err of errors) {
    const segments = segmentsOf(err.instancePath);
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
        // A mapping's own message speaks of its content, not of its type.
        if (typeof here?.errorMessage === 'string' && here.properties === undefined) {
          message = here.errorMessage;
          break;
        }
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
 * Leaves out what only explains another error: the `if` of an if/then (its `then` error is the
 * real one), and for a failed anyOf either the errors of the one branch whose type the value has
 * (a mapping where "a list or a mapping" is allowed: what is wrong in the mapping), or else the
 * anyOf's own message (it says what is allowed) instead of every branch's.
 */
function relevant(errors: readonly SchemaError[], root: Schema, data: unknown): SchemaError[] {
  const drop = new Set<SchemaError>();
  for (const a of errors) {
    if (a.keyword === 'if') drop.add(a);
    if (a.keyword !== 'anyOf' && a.keyword !== 'oneOf') continue;
    const value = valueAt(data, segmentsOf(a.instancePath));
    const branches = (a.schema as unknown[]).map((b) => reachable(root, b));
    const fitting = (a.schema as unknown[]).map((b, i) => (typesOf(root, b).has(jsonType(value)) || typesOf(root, b).has('any') ? i : -1)).filter((i) => i >= 0);
    const inside = (e: SchemaError) => e !== a && (e.instancePath === a.instancePath || e.instancePath.startsWith(`${a.instancePath}/`));
    for (const e of errors) {
      if (!inside(e)) continue;
      const from = branches.findIndex((b) => b.has(JSON.stringify(e.parentSchema)));
      if (from === -1) continue;
      if (fitting.length === 1 && fitting[0] === from) continue;
      drop.add(e);
    }
    if (fitting.length === 1) drop.add(a);
  }
  return errors.filter((e) => !drop.has(e));
}

function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v === 'object' ? 'object' : typeof v;
}

/** The JSON types a schema can accept ('any' when it does not say). */
function typesOf(root: Schema, s: unknown): Set<string> {
  let schema = s as Schema;
  if (typeof schema?.$ref === 'string') schema = schemaAt(root, `${schema.$ref}/x`, 1) ?? {};
  if (typeof schema.type === 'string') return new Set(schema.type === 'number' ? ['number', 'integer'] : [schema.type]);
  if ('const' in schema) return new Set([jsonType(schema.const)]);
  if (Array.isArray(schema.enum)) return new Set(schema.enum.map(jsonType));
  const branches = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (branches) return new Set(branches.flatMap((b) => [...typesOf(root, b)]));
  return new Set(['any']);
}

function segmentsOf(instancePath: string): string[] {
  return instancePath === '' ? [] : instancePath.slice(1).split('/').map((x) => x.replaceAll('~1', '/').replaceAll('~0', '~'));
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
