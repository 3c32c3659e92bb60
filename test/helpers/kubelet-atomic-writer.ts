// The kubelet's atomic writer for ConfigMap and Secret volumes, reproduced on a real directory
// (kubernetes/pkg/volume/util/atomic_writer.go): the files go into a new timestamped directory
// `..<timestamp>`, a symlink `..data_tmp` to it is renamed over `..data`, each user-visible name is a
// symlink `name -> ..data/name` (made once), and the previous timestamped directory is removed.

import { chmodSync, existsSync, lstatSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

let sequence = 0;

/**
 * Writes `files` (name → content) into `dir` the way the kubelet updates a mounted volume. `mode`:
 * the volume's defaultMode (0644 for a ConfigMap; injection mounts the keyring Secret with 0444).
 */
export function kubeletWrite(dir: string, files: Readonly<Record<string, string>>, mode = 0o644): void {
  mkdirSync(dir, { recursive: true });
  const dataLink = join(dir, '..data');
  const previous = existsSync(dataLink) ? readlinkSync(dataLink) : undefined;
  // The kubelet's name: `..` + time.Now().Format("2006_01_02_15_04_05.") + a random number.
  const t = new Date().toISOString();
  const stamp = `..${t.slice(0, 19).replace(/[-T:]/g, '_')}.${process.pid}${String(++sequence).padStart(6, '0')}`;
  const fresh = join(dir, stamp);
  mkdirSync(fresh, { mode: 0o755 });
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(fresh, name), content);
    chmodSync(join(fresh, name), mode);
  }
  const tmp = join(dir, '..data_tmp');
  rmSync(tmp, { force: true });
  symlinkSync(stamp, tmp);
  renameSync(tmp, dataLink);
  for (const name of Object.keys(files)) {
    const visible = join(dir, name);
    if (!isSymlink(visible)) symlinkSync(join('..data', name), visible);
  }
  if (previous !== undefined && previous !== stamp) rmSync(join(dir, previous), { recursive: true, force: true });
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
