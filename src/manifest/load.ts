// Loads every manifest in a directory into compiled plans. All-or-nothing: with any problem the
// caller gets the problems and keeps whatever set it had (a broken file never replaces a working plan).

import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ConfigProblem } from '../core/errors.ts';
import { compileManifest, type CompiledManifest } from './compile.ts';
import { parseManifestFile } from './parse.ts';

export interface ManifestLoad {
  readonly manifests: ReadonlyMap<string, CompiledManifest>;
  readonly problems: readonly ConfigProblem[];
}

export function loadManifestDir(dir: string): ManifestLoad {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => /\.ya?ml$/i.test(n)).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { manifests: new Map(), problems: [{ file: dir, message: code === 'ENOENT' ? 'manifest directory not found' : `cannot read manifest directory (${code})` }] };
  }
  const problems: ConfigProblem[] = [];
  const manifests = new Map<string, CompiledManifest>();
  if (names.length === 0) problems.push({ file: dir, message: 'no manifest files (*.yaml) found' });
  for (const name of names) {
    const file = join(dir, name);
    const parsed = parseManifestFile(file);
    problems.push(...parsed.problems);
    if (!parsed.manifest) continue;
    const existing = manifests.get(parsed.manifest.name);
    if (existing) {
      problems.push({ file, message: `manifest name "${parsed.manifest.name}" is already used by ${existing.file}` });
      continue;
    }
    manifests.set(parsed.manifest.name, compileManifest(parsed.manifest));
  }
  return { manifests, problems };
}
