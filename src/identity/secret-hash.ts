// Hashing of client secrets and API keys: scrypt with a random salt, stored as a self-describing
// string `scrypt$N$r$p$salt$hash` so parameters can be raised later without breaking old entries.

import { randomBytes, scrypt as scryptCallback, scryptSync, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const PREFIX = 'scrypt';
// 2^15: 32 MiB per check. Stronger than 2^14, and above glibc's 32 MiB cap on its dynamic mmap threshold,
// so every check's block is mmapped and returned on free; 16 MiB blocks are kept in the heap once the
// threshold has risen (measured: 65 MB RSS retained after a few 2^14 checks; docs/performance.md).
const DEFAULT_N = 32768;
const DEFAULT_R = 8;
const DEFAULT_P = 1;
const SALT_BYTES = 16;
const HASH_BYTES = 32;

interface ParsedHash {
  readonly N: number;
  readonly r: number;
  readonly p: number;
  readonly salt: Buffer;
  readonly hash: Buffer;
}

/**
 * The cost of each scrypt run so far (parameters and key length; the first 1000 only, so a running
 * gateway holds a few kilobytes at most): tests read these to show an unknown client costs the same
 * work as a known one, which wall time on a shared machine cannot.
 */
export const scryptRuns: { N: number; r: number; p: number; keylen: number }[] = [];

/** Async scrypt: runs on the libuv pool so token requests never block the event loop. */
function scrypt(secret: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  if (scryptRuns.length < 1000) scryptRuns.push({ N: options.N ?? 0, r: options.r ?? 0, p: options.p ?? 0, keylen });
  return new Promise((resolve, reject) => {
    scryptCallback(secret, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

function memoryFor(N: number, r: number): number {
  return 128 * N * r * 2;
}

/** Hashes a secret for the config file (`dpg hash-secret`). Synchronous: a CLI/start-up helper. */
export function hashSecret(secret: string): string {
  const salt = randomBytes(SALT_BYTES);
  const hash = scryptSync(secret, salt, HASH_BYTES, { N: DEFAULT_N, r: DEFAULT_R, p: DEFAULT_P, maxmem: memoryFor(DEFAULT_N, DEFAULT_R) });
  return [PREFIX, DEFAULT_N, DEFAULT_R, DEFAULT_P, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Parses a stored hash; undefined when it is not one we can verify (bad shape or unsafe parameters). */
function parseHash(stored: string): ParsedHash | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== PREFIX) return undefined;
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  const powerOfTwo = Number.isInteger(N) && N >= 1024 && N <= 1048576 && (N & (N - 1)) === 0;
  if (!powerOfTwo || !Number.isInteger(r) || r < 1 || r > 32 || !Number.isInteger(p) || p < 1 || p > 16) return undefined;
  if (!/^[A-Za-z0-9_-]+$/.test(parts[4]) || !/^[A-Za-z0-9_-]+$/.test(parts[5])) return undefined;
  const salt = Buffer.from(parts[4], 'base64url');
  const hash = Buffer.from(parts[5], 'base64url');
  if (salt.length < 8 || hash.length < 16 || hash.length > 64) return undefined;
  return { N, r, p, salt, hash };
}

/** True when `stored` is a hash string this module can verify (for config validation). */
export function isSecretHash(stored: string): boolean {
  return parseHash(stored) !== undefined;
}

let decoy: ParsedHash | undefined;

/** A hash of a random secret: verifying against it costs the same as a real check and never matches. */
function decoyHash(): ParsedHash {
  decoy ??= parseHash(hashSecret(randomBytes(32).toString('base64url'))) as ParsedHash;
  return decoy;
}

/**
 * Spends the time of one verification without a stored hash: used for unknown client ids so that
 * response timing does not reveal which clients exist. `like` is a configured hash whose
 * parameters to spend (hashes of older versions use N=2^14, new ones 2^15); the answer is ignored.
 */
export async function spendVerificationTime(secret: string, like = ''): Promise<void> {
  await verifySecret(secret, like);
}

/**
 * Checks a secret against a stored hash in constant time. A malformed stored hash still costs one
 * scrypt of the default parameters, so timing does not tell which entries exist.
 */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  const target = parsed ?? decoyHash();
  const candidate = await scrypt(secret, target.salt, target.hash.length, {
    N: target.N,
    r: target.r,
    p: target.p,
    maxmem: memoryFor(target.N, target.r),
  });
  return timingSafeEqual(candidate, target.hash) && parsed !== undefined;
}
