// Debian's iptables (both backends, IPv4 and IPv6, the xtables extensions) and the libraries it
// needs, copied into a directory for an image that has no package manager of its own: the
// Dockerfile's build stage runs this, and the runtime stage copies the directory over its root.
// `dpg capture` (the dpg-init container) runs these tools from the gateway's own image.
//
//   node scripts/iptables-files.mjs OUT_DIR     # apt-get installs iptables first when it is missing
//
// What to copy comes from dpkg's own records (/var/lib/dpkg/status and info/*.list): the iptables
// package and, recursively, the packages it depends on, except the C library, which the runtime base
// has (node needs it) and must not be replaced. Documentation is left out. No shell is needed.

import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE = 'iptables';
/** The C library and what it pulls in: provided by the runtime base itself. */
const FROM_THE_BASE = new Set(['libc6', 'libgcc-s1']);
/** Documentation is left out, except each package's copyright file (the licence travels with the binaries). */
const SKIPPED_PATHS = /^\/usr\/share\/(?:doc\/[^/]+\/(?!copyright$)|man\/|info\/|lintian\/|bug\/)/;

/** Installed packages from a dpkg status file: name → { version, depends, arch }. */
export function installedPackages(dpkgDir = '/var/lib/dpkg') {
  const packages = new Map();
  const status = join(dpkgDir, 'status');
  if (!existsSync(status)) return packages;
  for (const stanza of readFileSync(status, 'utf8').split(/\n\s*\n/)) {
    const field = (name) => new RegExp(`^${name}: (.*)$`, 'm').exec(stanza)?.[1]?.trim();
    const name = field('Package');
    if (!name || !/\binstalled$/.test(field('Status') ?? '')) continue;
    const depends = [field('Pre-Depends'), field('Depends')].filter(Boolean).join(', ');
    packages.set(name, { name, version: field('Version'), arch: field('Architecture'), depends, stanza: stanza.trim() });
  }
  return packages;
}

/** `pkg` and every package it depends on, transitively, minus the C library. First installed alternative wins. */
export function dependencyClosure(packages, pkg = PACKAGE) {
  const found = new Map();
  const visit = (name) => {
    if (found.has(name) || FROM_THE_BASE.has(name)) return;
    const p = packages.get(name);
    if (!p) throw new Error(`${name} is not installed (needed by ${PACKAGE})`);
    found.set(name, p);
    for (const group of p.depends.split(',').map((g) => g.trim()).filter(Boolean)) {
      const choices = group.split('|').map((c) => c.trim().split(/[\s(:]/)[0]);
      const chosen = choices.find((c) => packages.has(c) || FROM_THE_BASE.has(c));
      if (!chosen) throw new Error(`no installed package satisfies "${group}" (needed by ${name})`);
      visit(chosen);
    }
  };
  visit(pkg);
  return [...found.values()];
}

/** The files and symlinks dpkg installed for a package (directories and documentation left out). */
export function packageFiles(p, dpkgDir = '/var/lib/dpkg') {
  const list = [`${p.name}.list`, `${p.name}:${p.arch}.list`].map((f) => join(dpkgDir, 'info', f)).find((f) => existsSync(f));
  if (!list) throw new Error(`dpkg has no file list for ${p.name}`);
  return readFileSync(list, 'utf8')
    .split('\n')
    .filter((path) => path.startsWith('/') && !SKIPPED_PATHS.test(path))
    .filter((path) => {
      const s = lstatSync(path, { throwIfNoEntry: false });
      return s !== undefined && !s.isDirectory();
    });
}

/**
 * Copies one file or symlink (kept a symlink, target as written) to the same path under `root`,
 * with its directory resolved first: a merged-/usr system's /lib is a symlink, and a real /lib
 * directory in an image layer would replace the base's symlink instead of filling /usr/lib.
 */
export function copyInto(root, path) {
  const target = join(root, realpathSync(dirname(path)), basename(path));
  mkdirSync(dirname(target), { recursive: true });
  if (lstatSync(path).isSymbolicLink()) symlinkSync(readlinkSync(path), target);
  else copyFileSync(path, target);
}

function main(out) {
  let packages = installedPackages();
  if (!packages.has(PACKAGE)) {
    if (!existsSync('/usr/bin/apt-get')) {
      console.error(`${PACKAGE} is not installed and there is no apt-get: build with a Debian-based BUILD_IMAGE (the default node:20-bookworm-slim)`);
      process.exit(1);
    }
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    for (const args of [['update'], ['install', '-y', '--no-install-recommends', PACKAGE]]) {
      const r = spawnSync('apt-get', args, { stdio: 'inherit', env });
      if (r.status !== 0) process.exit(r.status ?? 1);
    }
    packages = installedPackages();
  }
  let files = 0;
  let bytes = 0;
  const closure = dependencyClosure(packages);
  for (const p of closure) {
    for (const path of packageFiles(p)) {
      copyInto(out, path);
      files++;
      bytes += lstatSync(path).size;
    }
  }
  console.log(`${closure.map((p) => `${p.name} ${p.version}`).join(', ')}: ${files} files, ${(bytes / 1e6).toFixed(1)} MB`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (!process.argv[2]) {
    console.error('usage: node scripts/iptables-files.mjs OUT_DIR');
    process.exit(2);
  }
  main(process.argv[2]);
}
