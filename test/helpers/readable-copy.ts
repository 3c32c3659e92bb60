// What a process run as another user needs from the checkout, in a directory that user can read.
// A clone made in a `mktemp -d` folder is mode 0700: a gateway started as UID 10001 cannot reach
// bin/dpg.js, dist/ or config/ through it. Files are hard-linked where the filesystem allows (no
// copying of node_modules' megabytes), else copied; the directory goes when the test process ends.

import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What `node bin/dpg.js` loads at run time: the entry point, the build, proto/ and two external packages (koffi's native part is in @koromix/). */
export const DPG_RUNTIME = ['package.json', 'bin', 'dist', 'proto', 'config', 'node_modules/koffi', 'node_modules/@koromix', 'node_modules/node-sql-parser'];

const copies = new Map<string, string>();

/**
 * A world-readable directory holding `paths` (relative to the repository root) at the same
 * relative places, made once per process for each set of paths.
 */
export function readableCopy(paths: readonly string[] = DPG_RUNTIME): string {
  const key = paths.join('\0');
  const made = copies.get(key);
  if (made) return made;
  const dir = mkdtempSync(join(tmpdir(), 'dpg-readable-'));
  chmodSync(dir, 0o755);
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (const path of paths) {
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    // -a keeps each file's mode (0644 in a checkout); -l links rather than copies.
    const linked = spawnSync('cp', ['-al', join(ROOT, path), target]);
    if (linked.status !== 0) cpSync(join(ROOT, path), target, { recursive: true });
  }
  // Directories only (node_modules/ and those cp made): a hard-linked file's mode is the checkout's own.
  spawnSync('find', [dir, '-type', 'd', '-exec', 'chmod', 'a+rx', '{}', '+']);
  copies.set(key, dir);
  return dir;
}
