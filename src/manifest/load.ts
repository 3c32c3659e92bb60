// Loads every manifest in a directory into compiled plans. All-or-nothing: with any problem the
// caller gets the problems and keeps whatever set it had (a broken file never replaces a working plan).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConfigProblem } from '../core/errors.ts';
import { compileManifest, type CompiledManifest } from './compile.ts';
import { parseManifestText } from './parse.ts';

export interface ManifestLoad {
  readonly manifests: ReadonlyMap<string, CompiledManifest>;
  readonly problems: readonly ConfigProblem[];
  /** The texts the plans were compiled from: protection workers compile the very same set. */
  readonly sources: readonly ManifestSource[];
}

/** One manifest file as read: its path (for problems) and its text. */
export interface ManifestSource {
  readonly file: string;
  readonly text: string;
}

export function loadManifestDir(dir: string): ManifestLoad {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => /\.ya?ml$/i.test(n)).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { manifests: new Map(), sources: [], problems: [{ file: dir, message: code === 'ENOENT' ? 'manifest directory not found' : `cannot read manifest directory (${code})` }] };
  }
  const problems: ConfigProblem[] = [];
  const sources: ManifestSource[] = [];
  if (names.length === 0) problems.push({ file: dir, message: 'no manifest files (*.yaml) found' });
  for (const name of names) {
    const file = join(dir, name);
    try {
      sources.push({ file, text: readFileSync(file, 'utf8') });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      problems.push({ file, message: code === 'ENOENT' ? 'file not found' : `cannot read file (${code ?? 'error'})` });
    }
  }
  const loaded = loadManifestSources(sources);
  return { manifests: loaded.manifests, sources, problems: [...problems, ...loaded.problems] };
}

/** Compiles manifests from texts already read (a directory's, or the set a worker was given). */
export function loadManifestSources(sources: readonly ManifestSource[]): ManifestLoad {
  const problems: ConfigProblem[] = [];
  const manifests = new Map<string, CompiledManifest>();
  for (const { file, text } of sources) {
    const parsed = parseManifestText(text, file);
    problems.push(...parsed.problems);
    if (!parsed.manifest) continue;
    const existing = manifests.get(parsed.manifest.name);
    if (existing) {
      problems.push({ file, message: `manifest name "${parsed.manifest.name}" is already used by ${existing.file}` });
      continue;
    }
    manifests.set(parsed.manifest.name, compileManifest(parsed.manifest));
  }
  return { manifests, problems, sources };
}
