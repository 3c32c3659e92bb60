// Manual injection (`dpg inject`): a multi-document YAML stream in, the same stream out with every
// pod template injected. Each changed document is patched in place (comments and key order kept
// where the yaml package can); other kinds pass through. All or nothing: when any document is
// unreadable or refused, no output is produced at all. YAML is read as the API server reads it
// (manifest-yaml.ts: YAML 1.1 scalars, merge keys); input that kubectl would decode as JSON (its
// first character is `{`) is read as JSON and written back as JSON.

import { randomUUID } from 'node:crypto';
import { Document, Parser, Scalar, isMap, isScalar, isSeq, visit, type Pair, type YAMLSeq } from 'yaml';
import { KUBE_YAML, parseManifests } from './manifest-yaml.ts';
import { emitYaml } from './yaml-emit.ts';
import { podPatch } from './patch.ts';
import { inject, type InjectorOptions, type JsonObject } from './inject.ts';
import { describe, isList, templatePath } from './workloads.ts';
import { applyPatchToDocument } from './yaml-patch.ts';

export interface ObjectReport {
  /** 1-based document number in the stream. */
  readonly document: number;
  /** `deployment/orders`, `pod/web`, `list/(unnamed) item 2 deployment/orders`. */
  readonly object: string;
  readonly outcome: 'injected' | 'unchanged' | 'skipped' | 'refused' | 'passed-through';
  readonly messages: readonly string[];
  /** Risks of the injected pod's settings (no keyring Secret); injected and unchanged pods only. */
  readonly warnings?: readonly string[];
}

export interface ManualResult {
  /** The injected stream; undefined when any document failed. */
  readonly output?: string;
  readonly reports: readonly ObjectReport[];
}

/** No folding of long lines (status annotations), `[a]` not `[ a ]`. */
const STRINGIFY = { lineWidth: 0, flowCollectionPadding: false } as const;

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function getPath(object: JsonObject, path: readonly string[]): JsonObject | undefined {
  let node: unknown = object;
  for (const key of path) node = isObject(node) ? node[key] : undefined;
  return isObject(node) ? node : undefined;
}

/** Injects one object (or every item of a List) and says what happened to each. */
export function injectObject(object: JsonObject, options: InjectorOptions, document: number, prefix = ''): { object: JsonObject; reports: ObjectReport[] } {
  const name = `${prefix}${describe(object)}`;
  if (isList(object)) {
    const reports: ObjectReport[] = [];
    const items = (object.items as unknown[]).map((item, i) => {
      if (!isObject(item)) return item;
      const r = injectObject(item, options, document, `${name} item ${i + 1} `);
      reports.push(...r.reports);
      return r.object;
    });
    return { object: { ...object, items }, reports };
  }
  const path = templatePath(object);
  const template = path && getPath(object, path);
  if (!path || !template) return { object, reports: [{ document, object: name, outcome: 'passed-through', messages: [] }] };

  const result = inject(template, options);
  if (result.outcome === 'skipped') return { object, reports: [{ document, object: name, outcome: 'skipped', messages: [result.reason] }] };
  if (result.outcome === 'refused') return { object, reports: [{ document, object: name, outcome: 'refused', messages: result.problems }] };
  const replaced = path.length === 0 ? result.template : setPath(object, path, result.template);
  const unchanged = podPatch(object, replaced).length === 0;
  return { object: replaced, reports: [{ document, object: name, outcome: unchanged ? 'unchanged' : 'injected', messages: result.notes, warnings: result.warnings }] };
}

function setPath(object: JsonObject, path: readonly string[], value: JsonObject): JsonObject {
  const [head, ...rest] = path;
  const inner = object[head] as JsonObject;
  return { ...object, [head]: rest.length === 0 ? value : setPath(inner, rest, value) };
}

function yamlProblem(doc: Document): string | undefined {
  const error = doc.errors[0];
  if (!error) return undefined;
  const line = error.linePos?.[0].line;
  return `YAML ${error.code}${line ? ` at line ${line}` : ''}`;
}

/**
 * kubectl decodes input whose first non-space character is `{` as JSON (one object; a `List` for
 * many): undefined for anything else. The parse error is not quoted: it would quote the input.
 */
function readJson(text: string): { value?: unknown; problem?: string } | undefined {
  if (!text.trimStart().startsWith('{')) return undefined;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { problem: 'JSON: the input starts with { but is not one JSON object (kubectl reads it as JSON too)' };
  }
}

/** JSON in, JSON out: the injected object as kubectl would print it (two-space indent). */
function injectJson(text: string, json: { value?: unknown; problem?: string }, options: InjectorOptions): ManualResult {
  if (json.problem !== undefined || !isObject(json.value)) {
    return { reports: [{ document: 1, object: '(unreadable)', outcome: 'refused', messages: [json.problem ?? 'JSON: the input is not an object'] }] };
  }
  const r = injectObject(json.value, options, 1);
  if (r.reports.some((x) => x.outcome === 'refused')) return { reports: r.reports };
  const changed = r.reports.some((x) => x.outcome === 'injected');
  return { output: changed ? `${JSON.stringify(r.object, null, 2)}\n` : text, reports: r.reports };
}

/** Injects every workload of a YAML stream, or of one JSON object. */
export function injectStream(text: string, options: InjectorOptions): ManualResult {
  const json = readJson(text);
  if (json) return injectJson(text, json, options);
  const docs = parseManifests(text);
  // A stream that holds no document at all (empty input) is an empty stream.
  const list = Array.isArray(docs) ? docs : [];
  const reports: ObjectReport[] = [];
  // The source split is a second parse: only made when a document is to come out unchanged.
  let split: string[] | undefined | null = null;
  const source = (i: number): string | undefined => {
    if (split === null) split = documentSources(text, list.length);
    return split?.[i];
  };
  const out: string[] = [];
  let failed = false;
  list.forEach((doc, i) => {
    const n = i + 1;
    const problem = yamlProblem(doc);
    if (problem) {
      reports.push({ document: n, object: '(unreadable)', outcome: 'refused', messages: [problem] });
      failed = true;
      return;
    }
    const listed = injectListDocument(doc, text, options, n);
    if (listed) {
      reports.push(...listed.reports);
      if (listed.text === undefined) failed = true;
      else out.push(listed.text);
      return;
    }
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (!isObject(value)) {
      if (value !== null && value !== undefined) reports.push({ document: n, object: '(not an object)', outcome: 'passed-through', messages: [] });
      out.push(source(i) ?? doc.toString(STRINGIFY));
      return;
    }
    const r = injectObject(value, options, n);
    reports.push(...r.reports);
    if (r.reports.some((x) => x.outcome === 'refused')) {
      failed = true;
      return;
    }
    if (r.reports.every((x) => x.outcome !== 'injected')) {
      out.push(source(i) ?? doc.toString(STRINGIFY));
      return;
    }
    patchDocument(doc, value, r.object);
    out.push(doc.toString(STRINGIFY));
  });
  if (failed) return { reports };
  return { output: joinDocuments(out), reports };
}

/** Patches one document in place to `target`; re-creates it from `target` when the AST cannot take the patch. */
function patchDocument(doc: Document, current: unknown, target: JsonObject): void {
  const patch = podPatch(current, target);
  if (patch.length === 0) return;
  try {
    applyPatchToDocument(doc, patch);
    if (podPatch(doc.toJS(), target).length > 0) throw new Error('patched document differs');
  } catch {
    // An alias or an odd layout on the way: re-create the document from the injected object.
    doc.contents = doc.createNode(target) as typeof doc.contents;
  }
}

/**
 * A List document (`kubectl get deploy -o yaml`), item by item (issue 16 class 14): each item is
 * read, injected, patched and printed on its own, and its nodes are let go before the next, so
 * time and memory grow with the input, not with every injected item held at once. Undefined (the
 * whole-document path is taken) for anything but a top-level `*List` with an `items` sequence and
 * no aliases (an alias may point into another item). `text` is undefined when an item is refused.
 */
function injectListDocument(doc: Document, source: string, options: InjectorOptions, n: number): { text?: string; reports: ObjectReport[] } | undefined {
  const root = doc.contents;
  if (!isMap(root)) return undefined;
  const kind = doc.get('kind');
  const pair = root.items.find((p) => isScalar(p.key) && p.key.value === 'items') as Pair<Scalar, unknown> | undefined;
  if (typeof kind !== 'string' || !kind.endsWith('List') || !pair || !isSeq(pair.value)) return undefined;
  // An alias needs a `*` in the document's text: only then is the tree walked to look for one.
  let aliased = false;
  const range = doc.range as [number, number, number] | undefined;
  if (!range || source.slice(range[0], range[2]).includes('*')) {
    visit(doc, {
      Alias() {
        aliased = true;
        return visit.BREAK;
      },
    });
  }
  if (aliased) return undefined;

  // The document around its items, with a marker where they go.
  const seq = pair.value as YAMLSeq;
  const marker = `dpg-items-${randomUUID()}`;
  pair.value = new Scalar(marker);
  const shell = doc.toString(STRINGIFY);
  pair.value = seq;
  const at = shell.indexOf(`items: ${marker}\n`);
  if (at < 0 || (at > 0 && shell[at - 1] !== '\n') || shell.indexOf(marker, at + marker.length) >= 0) return undefined;

  const name = describe({ kind, metadata: { name: doc.getIn(['metadata', 'name']), generateName: doc.getIn(['metadata', 'generateName']) } });
  const reports: ObjectReport[] = [];
  const parts: string[] = [];
  let refused = false;
  seq.items.forEach((node, i) => {
    const part = new Document(null, KUBE_YAML);
    part.contents = node as typeof part.contents;
    const item: unknown = part.toJS({ maxAliasCount: 100 });
    // An item with no comment (and no tag: `!!binary` is no JSON data) has nothing its data does not
    // hold: it is written from the data (yaml-emit.ts), without a node tree to patch and print.
    // Otherwise it is patched in place, comments kept. A `#` or `!` inside a string only costs time.
    const range = (node as { range?: [number, number, number] } | null)?.range;
    const text = range ? source.slice(range[0], range[2]) : undefined;
    const commented = text === undefined || text.includes('#') || text.includes('!') || hasOwnComment(node);
    let written: JsonObject | undefined;
    if (isObject(item)) {
      const r = injectObject(item, options, n, `${name} item ${i + 1} `);
      reports.push(...r.reports);
      if (r.reports.some((x) => x.outcome === 'refused')) refused = true;
      if (!refused && commented) patchDocument(part, item, r.object);
      written = r.object;
    }
    if (!refused) parts.push(commented || written === undefined ? indentItem(part.toString(STRINGIFY)) : itemFromData(written));
    // Printed: its nodes (and what injection added) can go.
    seq.items[i] = null;
  });
  if (refused) return { reports };
  const items = parts.length === 0 ? 'items: []\n' : `items:\n${parts.join('')}`;
  return { text: `${shell.slice(0, at)}${items}${shell.slice(at + `items: ${marker}\n`.length)}`, reports };
}

/** Comments the yaml package keeps on the node itself (before or after it), outside its source range. */
function hasOwnComment(node: unknown): boolean {
  const n = node as { commentBefore?: string | null; comment?: string | null } | null;
  return Boolean(n?.commentBefore || n?.comment);
}

/** An injected item written from its data, as an item of the top-level `items` sequence. */
function itemFromData(value: JsonObject): string {
  const text = emitYaml(value, 4);
  return `  - ${text.slice(4)}`;
}

/** A document's text as an item of the top-level `items` sequence, indented as the yaml package indents sequences. */
function indentItem(text: string): string {
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  return `${lines.map((line, j) => (j === 0 ? `  - ${line}` : line === '' ? '' : `    ${line}`)).join('\n')}\n`;
}

/**
 * The source text of each document (with its marker, comments and any `...`), so documents that are
 * not changed come out byte for byte; undefined when the split does not line up with the documents.
 */
function documentSources(text: string, count: number): string[] | undefined {
  const starts = [...new Parser().parse(text)].filter((t) => t.type === 'document').map((t) => t.offset);
  if (starts.length !== count || count === 0) return undefined;
  starts[0] = 0;
  return starts.map((start, i) => text.slice(start, starts[i + 1] ?? text.length));
}

/** Documents separated by `---`; a document that already starts with its marker keeps it. */
function joinDocuments(parts: string[]): string {
  return parts
    .map((p, i) => {
      const body = p.endsWith('\n') || i === parts.length - 1 ? p : `${p}\n`;
      return i === 0 || /^---(\s|$)/.test(body) ? body : `---\n${body}`;
    })
    .join('');
}

/**
 * The validating check for a stream (`dpg inject --check`): every workload that injection would
 * change is reported — not injected, injected by another version or with other settings, or refused.
 */
export function checkStream(text: string, options: InjectorOptions): { ok: boolean; reports: ObjectReport[] } {
  const json = readJson(text);
  if (json) {
    const reports = json.problem !== undefined || !isObject(json.value)
      ? [{ document: 1, object: '(unreadable)', outcome: 'refused' as const, messages: [json.problem ?? 'JSON: the input is not an object'] }]
      : injectObject(json.value, options, 1).reports;
    return { ok: reports.every((r) => r.outcome === 'unchanged' || r.outcome === 'skipped' || r.outcome === 'passed-through'), reports };
  }
  const docs = parseManifests(text);
  const list = Array.isArray(docs) ? docs : [];
  const reports: ObjectReport[] = [];
  list.forEach((doc, i) => {
    const problem = yamlProblem(doc);
    if (problem) {
      reports.push({ document: i + 1, object: '(unreadable)', outcome: 'refused', messages: [problem] });
      return;
    }
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (isObject(value)) reports.push(...injectObject(value, options, i + 1).reports);
  });
  const ok = reports.every((r) => r.outcome === 'unchanged' || r.outcome === 'skipped' || r.outcome === 'passed-through');
  return { ok, reports };
}
