// The injector's own options (image, and the settings a pod without annotations gets), from the
// flags `dpg inject` and `dpg webhook` share. Defaults use the annotation vocabulary itself
// (`--default dpg.io/keyring=dpg-keyring`), so there is one set of names and one set of checks.

import { readFileSync } from 'node:fs';
import type { InjectorOptions } from './inject.ts';
import { applyAnnotations, BUILT_IN_DEFAULTS } from './settings.ts';

/** The project's version (package.json), recorded in every status annotation. */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
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
  const pairs: Record<string, string> = {};
  for (const pair of flags.defaults ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      problems.push(`--default ${JSON.stringify(pair)}: expected dpg.io/NAME=VALUE`);
      continue;
    }
    pairs[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  for (const key of Object.keys(pairs)) if (!key.startsWith('dpg.io/')) problems.push(`--default ${key}: only dpg.io/ annotations have defaults`);
  const { settings, problems: settingProblems } = applyAnnotations(BUILT_IN_DEFAULTS, pairs);
  problems.push(...settingProblems.map((p) => `--default ${p.key}: ${p.message}`));
  if (problems.length > 0) return { problems };
  return {
    options: { image, version, defaults: settings, ...(pull ? { imagePullPolicy: pull as (typeof PULL_POLICIES)[number] } : {}) },
    problems,
  };
}
