// Validates Kubernetes objects against the API's OpenAPI schemas, twice:
// 1. kubernetes-models' generated validators (types, required fields, enums, formats);
// 2. a strict pass that the first cannot do — unknown fields. Each object is written as a typed
//    TypeScript literal (`const o: IDeployment = {...}`) and type-checked in memory: excess-property
//    checks then reject a misspelt or invented field at any depth, as `kubectl --validate=strict` would.

import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import ts from 'typescript';

export type K8sObject = { apiVersion?: unknown; kind?: unknown; [key: string]: unknown };

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The kubernetes-models module and interface of an apiVersion/kind. */
function modelOf(object: K8sObject): { module: string; iface: string } | undefined {
  if (typeof object.apiVersion !== 'string' || typeof object.kind !== 'string') return undefined;
  const group = object.apiVersion.includes('/') ? object.apiVersion.split('/')[0] : '';
  const base = group.endsWith('cert-manager.io')
    ? '@kubernetes-models/cert-manager'
    : group === 'monitoring.coreos.com'
      ? '@kubernetes-models/prometheus-operator'
      : 'kubernetes-models';
  return { module: `${base}/${object.apiVersion}/${object.kind}`, iface: `I${object.kind}` };
}

/**
 * kustomize writes long base64 values as literal blocks with line breaks, which Go's base64 decoder
 * (and so the API server) skips; the generated validator's `byte` format does not, so drop them.
 */
function withoutBase64LineBreaks(object: K8sObject): K8sObject {
  if (object.kind !== 'Secret' || typeof object.data !== 'object' || object.data === null) return object;
  const data = Object.fromEntries(Object.entries(object.data).map(([k, v]) => [k, typeof v === 'string' ? v.replace(/[\r\n]/g, '') : v]));
  return { ...object, data };
}

async function runtimeProblems(label: string, input: K8sObject): Promise<string[]> {
  const object = withoutBase64LineBreaks(input);
  const model = modelOf(object);
  if (!model) return [`${label}: no apiVersion/kind`];
  let mod: Record<string, new (data: unknown) => { validate(): void }>;
  try {
    mod = (await import(model.module)) as typeof mod;
  } catch {
    return [`${label}: no schema for ${String(object.apiVersion)} ${String(object.kind)}`];
  }
  const Model = mod[String(object.kind)];
  if (!Model) return [`${label}: no schema for ${String(object.kind)}`];
  try {
    new Model(object).validate();
    return [];
  } catch (err) {
    return [`${label}: ${(err as Error).message}`];
  }
}

function strictProblems(items: readonly { label: string; object: K8sObject }[]): string[] {
  const file = join(ROOT, 'test', 'k8s', '__strict_schema_check__.ts');
  const lines: string[] = [];
  const owner: { from: number; label: string }[] = [];
  items.forEach(({ label, object }, i) => {
    const model = modelOf(object)!;
    lines.push(`import type { ${model.iface} as T${i} } from '${model.module}';`);
  });
  items.forEach(({ label, object }, i) => {
    owner.push({ from: lines.length, label });
    lines.push(`export const o${i}: T${i} = ${JSON.stringify(object, null, 1)};`.split('\n').join('\n'));
    // Keep line numbers in step with the array (one entry may hold many lines).
    const count = lines[lines.length - 1].split('\n').length;
    for (let k = 1; k < count; k++) lines.push('');
  });
  const text = lines.map((l) => l).join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language) => (name === file ? ts.createSourceFile(name, text, language) : getSourceFile(name, language));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file)!;
  return ts.getPreEmitDiagnostics(program, source).map((d) => {
    const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line;
    const label = [...owner].reverse().find((o) => o.from <= line)?.label ?? '(imports)';
    return `${label}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

/** Every problem of every object, labelled; empty when all are valid. */
export async function validateObjects(items: readonly { label: string; object: K8sObject }[]): Promise<string[]> {
  const problems: string[] = [];
  for (const { label, object } of items) problems.push(...(await runtimeProblems(label, object)));
  if (problems.length > 0) return problems;
  return strictProblems(items);
}
