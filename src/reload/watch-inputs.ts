// Watches the files a configuration is made of and asks for one reload per burst of changes.
// Directories are watched, not files: an editor's or the kubelet's atomic replace (a rename over the
// file, or the `..data` symlink swap of a ConfigMap/Secret volume) ends a watch on the file itself,
// while the directory sees the rename. Events for other files in a watched directory are ignored.

import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../core/logger.ts';

export interface WatchedInput {
  /** A file (its directory is watched, for its name and the kubelet's `..` entries) or a whole directory. */
  readonly path: string;
  readonly kind: 'file' | 'dir';
}

export interface InputWatcher {
  close(): void;
}

/** Calls `onChange` once `debounceMs` after the last event of a burst. */
export function watchInputs(inputs: readonly WatchedInput[], onChange: () => void, options: { debounceMs: number; logger: Logger }): InputWatcher {
  let timer: NodeJS.Timeout | undefined;
  const changed = (): void => {
    clearTimeout(timer);
    timer = setTimeout(onChange, options.debounceMs);
    timer.unref();
  };
  // One watch per directory; a directory watched whole takes every name.
  const dirs = new Map<string, { all: boolean; names: Set<string> }>();
  for (const input of inputs) {
    const dir = input.kind === 'dir' ? input.path : dirname(input.path);
    const entry = dirs.get(dir) ?? { all: false, names: new Set<string>() };
    if (input.kind === 'dir') entry.all = true;
    else entry.names.add(basename(input.path));
    dirs.set(dir, entry);
  }
  const watchers: FSWatcher[] = [];
  for (const [dir, wanted] of dirs) {
    try {
      const w = watch(dir, { persistent: false }, (_event, name) => {
        // No name (some platforms): take it as ours. `..data`, `..data_tmp`, `..2026_…`: the kubelet's swap.
        if (wanted.all || name === null || wanted.names.has(String(name)) || String(name).startsWith('..')) changed();
      });
      w.on('error', () => options.logger.warn({ dir }, 'config watch stopped for a directory; reload with SIGHUP'));
      watchers.push(w);
    } catch {
      options.logger.warn({ dir }, 'cannot watch a config directory; reload with SIGHUP');
    }
  }
  return {
    close() {
      clearTimeout(timer);
      for (const w of watchers) w.close();
    },
  };
}
