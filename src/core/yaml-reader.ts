// Reads YAML files into plain values while remembering where each node came from, so config and
// manifest validation can say "file:line: path: problem" for every problem at once.

import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, isMap, isSeq, isScalar, type Node as YamlNode } from 'yaml';
import type { ConfigProblem } from './errors.ts';

/** Collects problems for one file. */
export class ProblemSink {
  readonly problems: ConfigProblem[] = [];
  constructor(
    readonly file: string,
    private readonly lines: LineCounter,
  ) {}

  lineOf(node: YamlNode | null | undefined): number | undefined {
    const offset = node?.range?.[0];
    return offset === undefined ? undefined : this.lines.linePos(offset).line;
  }

  add(node: YamlNode | null | undefined, path: string, message: string): void {
    const offset = node?.range?.[0];
    if (offset === undefined) {
      this.problems.push({ file: this.file, path: path || undefined, message });
      return;
    }
    const { line, col } = this.lines.linePos(offset);
    this.problems.push({ file: this.file, line, column: col, path: path || undefined, message });
  }
}

/**
 * A typed view of one YAML node. Getters record a problem and return undefined on a wrong type,
 * so a validator can read everything and report every problem in one pass.
 */
export class YamlValue {
  constructor(
    readonly node: YamlNode | null | undefined,
    readonly path: string,
    readonly sink: ProblemSink,
  ) {}

  get present(): boolean {
    return this.node !== undefined && this.node !== null && !(isScalar(this.node) && this.node.value === null);
  }

  /** 1-based line of the node in its file, when known. */
  get line(): number | undefined {
    return this.sink.lineOf(this.node);
  }

  problem(message: string): undefined {
    this.sink.add(this.node, this.path, message);
    return undefined;
  }

  /** Plain JS value of the node (no source positions). */
  plain(): unknown {
    if (this.node === undefined || this.node === null) return undefined;
    return this.node.toJSON();
  }

  isMap(): boolean {
    return isMap(this.node);
  }

  isSeq(): boolean {
    return isSeq(this.node);
  }

  scalarValue(): unknown {
    return isScalar(this.node) ? this.node.value : undefined;
  }

  string(): string | undefined {
    const v = this.scalarValue();
    if (typeof v !== 'string') return this.problem('must be a string');
    return v;
  }

  number(opts: { integer?: boolean; min?: number; max?: number } = {}): number | undefined {
    const v = this.scalarValue();
    if (typeof v !== 'number' || !Number.isFinite(v)) return this.problem('must be a number');
    if (opts.integer && !Number.isInteger(v)) return this.problem('must be a whole number');
    if (opts.min !== undefined && v < opts.min) return this.problem(`must be at least ${opts.min}`);
    if (opts.max !== undefined && v > opts.max) return this.problem(`must be at most ${opts.max}`);
    return v;
  }

  boolean(): boolean | undefined {
    const v = this.scalarValue();
    if (typeof v !== 'boolean') return this.problem('must be true or false');
    return v;
  }

  /**
   * Entries of a map, in order, after checking that every key is one of `allowed` (unless
   * `unknownKeys` is false: a schema has checked the keys, and other keys are left out quietly).
   */
  entries(allowed?: readonly string[], { unknownKeys = true } = {}): [string, YamlValue][] {
    if (!isMap(this.node)) {
      this.problem('must be a mapping');
      return [];
    }
    const out: [string, YamlValue][] = [];
    for (const pair of this.node.items) {
      const keyNode = pair.key as YamlNode | null;
      const key = isScalar(keyNode) ? String(keyNode.value) : undefined;
      if (key === undefined) {
        this.sink.add(keyNode, this.path, 'keys must be plain strings');
        continue;
      }
      const childPath = this.path ? `${this.path}.${key}` : key;
      if (allowed && !allowed.includes(key)) {
        if (unknownKeys) this.sink.add(keyNode, childPath, `unknown key (expected one of: ${allowed.join(', ')})`);
        continue;
      }
      out.push([key, new YamlValue(pair.value as YamlNode | null, childPath, this.sink)]);
    }
    return out;
  }

  /** A map's fields by name, checking unknown keys (see entries()); absent fields are non-present YamlValues. */
  fields<K extends string>(allowed: readonly K[], options: { unknownKeys?: boolean } = {}): Record<K, YamlValue> {
    const out = {} as Record<K, YamlValue>;
    for (const k of allowed) out[k] = new YamlValue(undefined, this.path ? `${this.path}.${k}` : k, this.sink);
    for (const [k, v] of this.entries(allowed, options)) out[k as K] = v;
    return out;
  }

  items(): YamlValue[] {
    if (!isSeq(this.node)) {
      this.problem('must be a list');
      return [];
    }
    return this.node.items.map((n, i) => new YamlValue(n as YamlNode | null, `${this.path}[${i}]`, this.sink));
  }
}

export interface ParsedYaml {
  readonly root: YamlValue;
  readonly sink: ProblemSink;
}

/** Parses YAML text; syntax errors become problems with their line. */
export function parseYaml(text: string, file: string): ParsedYaml {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, strict: true });
  const sink = new ProblemSink(file, lines);
  for (const err of doc.errors) {
    const { line, col } = lines.linePos(err.pos[0]);
    // yaml's messages describe syntax (they may quote a few characters of the file, which is config, not payload).
    sink.problems.push({ file, line, column: col, message: `YAML syntax: ${err.message.split('\n')[0]}` });
  }
  return { root: new YamlValue(doc.contents as YamlNode | null, '', sink), sink };
}

export function readYamlFile(file: string): ParsedYaml {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const lines = new LineCounter();
    const sink = new ProblemSink(file, lines);
    const code = (err as NodeJS.ErrnoException).code;
    sink.problems.push({ file, message: code === 'ENOENT' ? 'file not found' : `cannot read file (${code ?? 'error'})` });
    return { root: new YamlValue(undefined, '', sink), sink };
  }
  return parseYaml(text, file);
}
