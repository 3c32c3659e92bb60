// The keyring: named master keys with versions that take effect at `activeFrom` instants, loaded
// from a file, an environment variable or a generated dev file, and HKDF derivation of working keys.

import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, realpathSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { ConfigError, DpgError, type ConfigProblem } from '../core/errors.ts';

export interface MasterKeyVersion {
  readonly kid: string;
  readonly version: number;
  readonly activeFrom: Date;
  /** Reverse only: Reconstruct and Decrypt may still use it, new data never (docs/keys.md). */
  readonly retired: boolean;
  /** 32 bytes. Non-enumerable, so logging or serialising a version never prints it. */
  readonly material: Uint8Array;
}

/** Where a document path sits in its source text (for file/line problem reports). */
export type KeyDocumentLocator = (path: readonly (string | number)[]) => { line: number; column: number } | undefined;

const MATERIAL_BYTES = 32;
const KID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const BASE64_PATTERN = /^[A-Za-z0-9+/_-]+={0,2}$/;
/** Unknown property names are echoed only when they look like identifiers, never like key material. */
const ECHOABLE_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,31}$/;

const TOP_LEVEL_FIELDS = new Set(['defaultKey', 'keys']);
const KEY_FIELDS = new Set(['id', 'versions']);
const VERSION_FIELDS = new Set(['version', 'activeFrom', 'material', 'retired']);

export class Keyring {
  readonly defaultKid: string;
  /** Versions per key id, oldest first (version numbers and activeFrom both increase). */
  readonly #keys: ReadonlyMap<string, readonly MasterKeyVersion[]>;

  private constructor(defaultKid: string, keys: ReadonlyMap<string, readonly MasterKeyVersion[]>) {
    this.defaultKid = defaultKid;
    this.#keys = keys;
  }

  /**
   * Validates a parsed key document. Every problem is reported (ConfigError naming `source`, with
   * line numbers when `locate` is given); no problem ever quotes key material.
   */
  static fromDocument(doc: unknown, source: string, locate?: KeyDocumentLocator): Keyring {
    const problems: ConfigProblem[] = [];
    const report = (path: readonly (string | number)[], message: string): void => {
      const at = locate?.(path);
      problems.push({
        file: source,
        ...(at === undefined ? {} : { line: at.line, column: at.column }),
        ...(path.length === 0 ? {} : { path: formatPath(path) }),
        message,
      });
    };
    const keys = new Map<string, MasterKeyVersion[]>();
    let defaultKid: string | undefined;

    if (!isPlainObject(doc)) {
      report([], 'the key document must be a mapping with a `keys` list');
      throw new ConfigError(problems);
    }
    reportUnknownFields(doc, TOP_LEVEL_FIELDS, [], report);
    const keyList = doc.keys;
    if (!Array.isArray(keyList) || keyList.length === 0) {
      report(['keys'], 'must be a non-empty list of keys');
    } else {
      const seenIds = new Set<unknown>();
      keyList.forEach((entry, k) => {
        const id = isPlainObject(entry) ? entry.id : undefined;
        const duplicate = id !== undefined && seenIds.has(id);
        if (duplicate) report(['keys', k, 'id'], 'duplicate key id');
        seenIds.add(id);
        const versions = validateKey(entry, ['keys', k], report);
        if (versions !== undefined && !duplicate) keys.set(versions.kid, versions.list);
      });
    }
    if (doc.defaultKey !== undefined) {
      if (typeof doc.defaultKey !== 'string' || !KID_PATTERN.test(doc.defaultKey)) {
        report(['defaultKey'], 'must be a key id');
      } else if (Array.isArray(keyList) && !keyList.some((e) => isPlainObject(e) && e.id === doc.defaultKey)) {
        report(['defaultKey'], 'names no key in `keys`');
      } else {
        defaultKid = doc.defaultKey;
      }
    } else if (keys.size > 0) {
      defaultKid = keys.keys().next().value;
    }
    if (problems.length > 0 || defaultKid === undefined) {
      if (problems.length === 0) report(['keys'], 'no usable key');
      throw new ConfigError(problems);
    }
    return new Keyring(defaultKid, keys);
  }

  kids(): string[] {
    return [...this.#keys.keys()];
  }

  /** The versions of `kid`, oldest first (empty for an unknown id). */
  versionsOf(kid: string): readonly MasterKeyVersion[] {
    return this.#keys.get(kid) ?? [];
  }

  /** The newest version of `kid` whose activeFrom is at or before `at`. */
  activeAt(kid: string, at: Date): MasterKeyVersion {
    const versions = this.#keys.get(kid);
    if (versions === undefined) throw new DpgError('INVALID_REQUEST', 'Unknown key id');
    const time = at instanceof Date ? at.getTime() : Number.NaN;
    if (Number.isNaN(time)) throw new DpgError('INVALID_REQUEST', 'Invalid snapshot date');
    for (let i = versions.length - 1; i >= 0; i--) {
      if (versions[i].activeFrom.getTime() <= time) return versions[i];
    }
    throw new DpgError(
      'INVALID_REQUEST',
      `No version of key "${kid}" is active at the snapshot date (the first becomes active at ${versions[0].activeFrom.toISOString()})`,
    );
  }

  /**
   * activeAt for new data (Encrypt, Pseudonymise, keyed hash, date shift): the version active at
   * `now`, refused when it is retired. Falling back to an older version would be no safer (it was
   * retired too, or is older still), so the gateway stops protecting with this key until a newer
   * version is added.
   */
  activeForNewData(kid: string, now: Date): MasterKeyVersion {
    const version = this.activeAt(kid, now);
    if (version.retired) {
      throw new DpgError('KEY_RETIRED', `Version ${version.version} of key "${kid}" is retired: add a newer version to protect new data`);
    }
    return version;
  }

  /** One line per key whose version active at `now` is retired: new data under it fails (KEY_RETIRED). */
  retiredNowWarnings(now: Date): string[] {
    const warnings: string[] = [];
    for (const kid of this.#keys.keys()) {
      let version: MasterKeyVersion;
      try {
        version = this.activeAt(kid, now);
      } catch {
        continue; // not active yet: reported when used
      }
      if (version.retired) {
        warnings.push(`key ${kid}: the version active now (v${version.version}) is retired, so Encrypt, Pseudonymise and keyed hashes fail until a newer version is added`);
      }
    }
    return warnings;
  }

  get(kid: string, version: number): MasterKeyVersion | undefined {
    return this.#keys.get(kid)?.find((v) => v.version === version);
  }

  /** One line per key for `dpg validate` and start-up logs: ids, versions and dates, never material. */
  explain(): string[] {
    return [...this.#keys].map(
      ([kid, versions]) =>
        `${kid}${kid === this.defaultKid ? ' (default)' : ''}: ` +
        versions.map((v) => `v${v.version} from ${v.activeFrom.toISOString()}${v.retired ? ' (retired: reverse only)' : ''}`).join(', '),
    );
  }
}

type Report = (path: readonly (string | number)[], message: string) => void;

function validateKey(
  entry: unknown,
  path: readonly (string | number)[],
  report: Report,
): { kid: string; list: MasterKeyVersion[] } | undefined {
  if (!isPlainObject(entry)) {
    report(path, 'must be a mapping with `id` and `versions`');
    return undefined;
  }
  reportUnknownFields(entry, KEY_FIELDS, path, report);
  let kid: string | undefined;
  if (typeof entry.id !== 'string' || !KID_PATTERN.test(entry.id)) {
    report([...path, 'id'], 'must be 1-64 characters of letters, digits, `.`, `_` or `-`, starting with a letter or digit');
  } else {
    kid = entry.id;
  }
  const versionList = entry.versions;
  if (!Array.isArray(versionList) || versionList.length === 0) {
    report([...path, 'versions'], 'must be a non-empty list of versions');
    return undefined;
  }
  const list: MasterKeyVersion[] = [];
  const seen = new Set<number>();
  versionList.forEach((raw, i) => {
    const vPath = [...path, 'versions', i];
    const parsed = validateVersion(raw, vPath, report);
    if (parsed === undefined) return;
    if (seen.has(parsed.version)) {
      report([...vPath, 'version'], 'duplicate version number');
      return;
    }
    seen.add(parsed.version);
    list.push(makeVersion(kid ?? '', parsed.version, parsed.activeFrom, parsed.material, parsed.retired));
  });
  list.sort((a, b) => a.version - b.version);
  for (let i = 1; i < list.length; i++) {
    if (list[i].activeFrom.getTime() <= list[i - 1].activeFrom.getTime()) {
      report([...path, 'versions'], `version ${list[i].version} must become active after version ${list[i - 1].version}`);
    }
  }
  if (kid === undefined || list.length !== versionList.length) return undefined;
  return { kid, list };
}

function validateVersion(
  raw: unknown,
  path: readonly (string | number)[],
  report: Report,
): { version: number; activeFrom: Date; material: Uint8Array; retired: boolean } | undefined {
  if (!isPlainObject(raw)) {
    report(path, 'must be a mapping with `version`, `activeFrom` and `material`');
    return undefined;
  }
  reportUnknownFields(raw, VERSION_FIELDS, path, report);
  let ok = true;
  const version = raw.version;
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1) {
    report([...path, 'version'], 'must be a whole number from 1');
    ok = false;
  }
  const activeFrom = parseInstant(raw.activeFrom);
  if (activeFrom === undefined) {
    report([...path, 'activeFrom'], 'must be an ISO 8601 timestamp with a time zone, e.g. 2024-01-01T00:00:00Z');
    ok = false;
  }
  const material = parseMaterial(raw.material);
  if (material === undefined) {
    report([...path, 'material'], `must be base64 of exactly ${MATERIAL_BYTES} random bytes`);
    ok = false;
  }
  if (raw.retired !== undefined && typeof raw.retired !== 'boolean') {
    report([...path, 'retired'], 'must be true or false');
    ok = false;
  }
  if (!ok) return undefined;
  return { version: version as number, activeFrom: activeFrom as Date, material: material as Uint8Array, retired: raw.retired === true };
}

function parseInstant(value: unknown): Date | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : new Date(value.getTime());
  if (typeof value !== 'string') return undefined;
  // A zone is required: a local-time activeFrom would rotate keys at different instants on different hosts.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function parseMaterial(value: unknown): Uint8Array | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (!BASE64_PATTERN.test(text)) return undefined;
  const decoded = Buffer.from(text, 'base64');
  if (decoded.length !== MATERIAL_BYTES) {
    decoded.fill(0);
    return undefined;
  }
  const material = new Uint8Array(decoded);
  decoded.fill(0);
  return material;
}

function makeVersion(kid: string, version: number, activeFrom: Date, material: Uint8Array, retired: boolean): MasterKeyVersion {
  const v = { kid, version, activeFrom, retired } as MasterKeyVersion;
  Object.defineProperty(v, 'material', { value: material, enumerable: false, writable: false });
  return Object.freeze(v);
}

function reportUnknownFields(
  obj: Record<string, unknown>,
  allowed: ReadonlySet<string>,
  path: readonly (string | number)[],
  report: Report,
): void {
  for (const name of Object.keys(obj)) {
    if (allowed.has(name)) continue;
    const shown = ECHOABLE_NAME.test(name) ? `property \`${name}\`` : 'property (name not shown)';
    report(path, `unknown ${shown} (expected ${[...allowed].map((a) => `\`${a}\``).join(', ')})`);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function formatPath(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/**
 * Parses YAML (or JSON) key document text with line tracking. Syntax errors are reported by code
 * and line only: the parser's own messages quote the offending line, which may hold key material.
 */
function parseKeyDocumentText(text: string, source: string): Keyring {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      doc.errors.map((err) => {
        const at = lineCounter.linePos(err.pos[0]);
        return { file: source, line: at.line, column: at.col, message: `YAML syntax error (${err.code})` };
      }),
    );
  }
  const locate: KeyDocumentLocator = (path) => {
    // Point at the deepest node of the path that exists.
    for (let depth = path.length; depth >= 0; depth--) {
      const node = doc.getIn(path.slice(0, depth), true) as { range?: [number, number, number] } | undefined;
      if (node && typeof node === 'object' && Array.isArray(node.range)) {
        const at = lineCounter.linePos(node.range[0]);
        return { line: at.line, column: at.col };
      }
    }
    return undefined;
  };
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch {
    throw new ConfigError([{ file: source, message: 'the key document could not be read (too many aliases?)' }]);
  }
  return Keyring.fromDocument(data, source, locate);
}

/**
 * Why a key file's permissions are unsafe, or undefined: other users may read or change it, or its
 * group may change it. Group read stays allowed (a Kubernetes Secret mounted with defaultMode 0440
 * and an fsGroup). The mode is the target's when the path is a symlink (Secret volumes use them).
 */
export function keyFilePermissionProblem(mode: number, inSecretVolume = false): string | undefined {
  if ((mode & 0o007) === 0 && (mode & 0o020) === 0) return undefined;
  // A Kubernetes Secret volume: its files are root's, so a non-root gateway reads them through the
  // other-read bit (defaultMode 0444); only containers that mount the volume see it, and injection
  // mounts the keyring in dpg-proxy alone. Writable by anyone but the owner stays refused.
  if (inSecretVolume && (mode & 0o022) === 0) return undefined;
  const octal = (mode & 0o777).toString(8).padStart(4, '0');
  return `the key file's permissions (${octal}) let ${mode & 0o020 ? 'its group change it' : 'other users read or change it'}: make it readable by its owner only (chmod 600; in Kubernetes, defaultMode: 0400)`;
}

/**
 * True when `path` is laid out as a file of a volume the kubelet writes (Secret, ConfigMap,
 * projected): it resolves into a timestamped directory `..YYYY_MM_DD_hh_mm_ss.N` next to the `..data`
 * symlink. The caller also requires the file to be root's, as the kubelet's files are.
 */
function inKubeletVolume(path: string): boolean {
  try {
    const parent = dirname(realpathSync(path));
    return /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$/.test(basename(parent)) && lstatSync(join(dirname(parent), '..data')).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Loads a keyring from a YAML or JSON file; problems name the file and line. Refuses unsafe permissions. */
export function loadKeyringFile(path: string): Keyring {
  let text: string;
  try {
    const info = statSync(path);
    if (!info.isFile()) throw new ConfigError([{ file: path, message: 'the key file is not a regular file' }]);
    // The kubelet writes Secret volumes as root: a look-alike layout made by another user is no Secret volume.
    const problem = process.platform === 'win32' ? undefined : keyFilePermissionProblem(info.mode, info.uid === 0 && inKubeletVolume(path));
    if (problem !== undefined) throw new ConfigError([{ file: path, message: problem }]);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'read error';
    throw new ConfigError([{ file: path, message: `cannot read the key file (${code})` }]);
  }
  return parseKeyDocumentText(text, path);
}

/**
 * Loads a keyring from an environment variable holding the document itself (YAML/JSON) or base64
 * of it (handy for Kubernetes Secrets and CI variables).
 */
export function loadKeyringFromEnv(varName: string, env: NodeJS.ProcessEnv = process.env): Keyring {
  const source = `environment variable ${varName}`;
  const value = env[varName];
  if (value === undefined || value.trim() === '') {
    throw new ConfigError([{ file: source, message: 'is not set or empty' }]);
  }
  const trimmed = value.trim();
  // Base64 never contains ':' or braces, which every key document does: no ambiguity.
  const text = /^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed.replace(/\s+/g, ''))
    ? Buffer.from(trimmed.replace(/\s+/g, ''), 'base64').toString('utf8')
    : value;
  return parseKeyDocumentText(text, source);
}

/**
 * Creates `<dataDir>/keyring.yaml` with one random key (file 0600, directory 0700) unless it
 * exists; returns its path. For development only: production keys come from a managed secret.
 */
export function ensureDevKeyring(dataDir: string): string {
  const created = mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (created !== undefined) chmodSync(dataDir, 0o700);
  const path = join(dataDir, 'keyring.yaml');
  // Our own file: opened up by hand (or by a copy), it is closed again, as the signing keys are.
  try {
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const material = randomBytes(MATERIAL_BYTES);
  const text =
    '# Development keyring generated by dpg. Do not use it in production: keys here are not backed up\n' +
    '# or managed. Rotate by adding a version with a later activeFrom; never edit or delete an old one.\n' +
    'defaultKey: default\n' +
    'keys:\n' +
    '  - id: default\n' +
    '    versions:\n' +
    // Active since the epoch, so requests with any past snapshot_date work in development.
    `      - { version: 1, activeFrom: "1970-01-01T00:00:00Z", material: "${material.toString('base64')}" }\n`;
  material.fill(0);
  // Written to a private temporary name, then linked into place: a crash never leaves a torn
  // keyring, and a keyring created concurrently by another process is never overwritten.
  const temporary = join(dataDir, `.keyring.yaml.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (err) {
    // A full disk: no empty temporary left behind for each failed start.
    closeSync(fd);
    unlinkSync(temporary);
    throw err;
  }
  closeSync(fd);
  try {
    chmodSync(temporary, 0o600);
    linkSync(temporary, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(temporary);
  }
  return path;
}

const DERIVE_SALT = Buffer.from('dpg/v1', 'utf8');
/** node:crypto's hkdfSync refuses info longer than this; longer info takes the RFC 5869 code below. */
const HKDF_INFO_LIMIT = 1024;

/**
 * A working key for one purpose, manifest, field and scope: HKDF-SHA-256 over the master key
 * version, salt 'dpg/v1', info = each of the four strings as 4-byte big-endian length || UTF-8.
 */
export function deriveKey(
  master: MasterKeyVersion,
  purpose: string,
  manifest: string,
  field: string,
  scope: string,
  length = 32,
): Uint8Array {
  if (!Number.isInteger(length) || length < 1 || length > 255 * 32) {
    throw new Error('derived key length must be 1 to 8160 bytes');
  }
  const info = lengthPrefixed([purpose, manifest, field, scope]);
  if (info.length <= HKDF_INFO_LIMIT) {
    return new Uint8Array(hkdfSync('sha256', master.material, DERIVE_SALT, info, length));
  }
  return hkdfSha256(master.material, DERIVE_SALT, info, length);
}

function lengthPrefixed(parts: readonly string[]): Buffer {
  const encoded = parts.map((p) => Buffer.from(p, 'utf8'));
  const out = Buffer.alloc(encoded.reduce((n, b) => n + 4 + b.length, 0));
  let offset = 0;
  for (const b of encoded) {
    out.writeUInt32BE(b.length, offset);
    out.set(b, offset + 4);
    offset += 4 + b.length;
  }
  return out;
}

/** RFC 5869 HKDF with HMAC-SHA-256, byte-for-byte what hkdfSync computes, without its info limit. */
export function hkdfSha256(ikm: Uint8Array, salt: Uint8Array, info: Uint8Array, length: number): Uint8Array {
  const prk = createHmac('sha256', salt).update(ikm).digest();
  const out = new Uint8Array(length);
  let previous: Buffer = Buffer.alloc(0);
  for (let offset = 0, counter = 1; offset < length; counter++) {
    previous = createHmac('sha256', prk).update(previous).update(info).update(Buffer.of(counter)).digest();
    out.set(previous.subarray(0, Math.min(32, length - offset)), offset);
    offset += 32;
  }
  prk.fill(0);
  previous.fill(0);
  return out;
}
