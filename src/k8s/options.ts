// The injector's own options (image, and the settings a pod without annotations gets), from the
// flags `dpg inject` and `dpg webhook` share. Defaults use the annotation vocabulary itself
// (`--default dpg.io/keyring=dpg-keyring`), so there is one set of names and one set of checks.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InjectorOptions } from './inject.ts';
import { ANNOTATIONS, applyAnnotations, BUILT_IN_DEFAULTS } from './settings.ts';

/** The project's version (package.json), recorded in every status annotation. */
export function packageVersion(): string {
  // Walk up from this module: the same answer from src/k8s/ and from a bundle in dist/.
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'data-protection-gateway' && pkg.version) return pkg.version;
  }
  throw new Error('package.json of data-protection-gateway not found above the k8s module');
}

export interface InjectorFlags {
  readonly image?: string;
  readonly imagePullPolicy?: string;
  /** `dpg.io/key=value` pairs. */
  readonly defaults?: readonly string[];
}

const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;

/** Builds options from flags; problems are returned for the caller to print (nothing is guessed). */
export function injectorOptions(flags: InjectorFlags, version = packageVersion()): { options?: InjectorOptions; problems: string[] } {
  const problems: string[] = [];
  const image = flags.image ?? `dpg:${version}`;
  if (!/^[^\s]+$/.test(image)) problems.push('--image: must be an image reference without spaces');
  const pull = flags.imagePullPolicy;
  if (pull !== undefined && !(PULL_POLICIES as readonly string[]).includes(pull)) problems.push(`--image-pull-policy: must be one of ${PULL_POLICIES.join(', ')}`);
  const pairs: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const pair of flags.defaults ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      problems.push(`--default ${JSON.stringify(pair)}: expected dpg.io/NAME=VALUE`);
      continue;
    }
    pairs[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  for (const key of Object.keys(pairs)) if (!key.startsWith('dpg.io/')) problems.push(`--default ${key}: only dpg.io/ annotations have defaults`);
  // The admission policy sees only the pod: a default it cannot see would make the two disagree.
  for (const a of ANNOTATIONS) if (a.podOnly && Object.hasOwn(pairs, a.key)) problems.push(`--default ${a.key}: a per-pod decision, set on the pod itself; it has no injector default`);
  const { settings, problems: settingProblems } = applyAnnotations(BUILT_IN_DEFAULTS, pairs);
  problems.push(...settingProblems.map((p) => `--default ${p.key}: ${p.message}`));
  if (problems.length > 0) return { problems };
  return {
    options: { image, version, defaults: settings, ...(pull ? { imagePullPolicy: pull as (typeof PULL_POLICIES)[number] } : {}) },
    problems,
  };
}
