// The token signing keys: private JWK files in a 0700 directory (files 0600), one per key, newest
// signs. Rotation adds a key; an older key stays published until the last token it signed expired.

import { chmod, mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Logger } from '../core/logger.ts';

export type SigningAlgorithm = 'EdDSA' | 'ES256';
export const SIGNING_ALGORITHMS: readonly SigningAlgorithm[] = ['EdDSA', 'ES256'];

const FILE_SUFFIX = '.jwk.json';
/** How often an unknown kid may trigger a rescan of the directory (keys added by a sibling process). */
const RESCAN_INTERVAL_MS = 5000;

export interface SigningKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  /** Creation time, seconds since the epoch (stored as the JWK's `iat` member). */
  readonly createdAt: number;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** Public members only, with kid, alg and use. */
  readonly publicJwk: JWK;
}

export interface SigningKeyStoreOptions {
  readonly dir: string;
  readonly algorithm: SigningAlgorithm;
  readonly rotationSeconds: number;
  /** Token lifetime: how long a replaced key stays published. */
  readonly retentionSeconds: number;
  readonly now: () => number;
  readonly logger: Logger;
}

export class SigningKeyStore {
  private keys: SigningKey[] = [];
  private rotating: Promise<SigningKey> | undefined;
  private lastScanMs = 0;

  private constructor(private readonly options: SigningKeyStoreOptions) {}

  /** Opens (creating if needed) the key directory and makes sure a current key exists. */
  static async open(options: SigningKeyStoreOptions): Promise<SigningKeyStore> {
    const store = new SigningKeyStore(options);
    await mkdir(options.dir, { recursive: true, mode: 0o700 });
    const info = await stat(options.dir);
    if ((info.mode & 0o077) !== 0) {
      await chmod(options.dir, 0o700);
      options.logger.warn({ dir: options.dir }, 'signing key directory was accessible to others; permissions set to 0700');
    }
    await store.scan();
    await store.current();
    return store;
  }

  private nowSeconds(): number {
    return Math.floor(this.options.now() / 1000);
  }

  /** The key that signs new tokens; rotates first when it is older than the rotation period. */
  async current(): Promise<SigningKey> {
    const newest = this.keys[0];
    if (newest !== undefined && this.nowSeconds() - newest.createdAt < this.options.rotationSeconds) return newest;
    this.rotating ??= this.rotate().finally(() => {
      this.rotating = undefined;
    });
    return this.rotating;
  }

  /** Keys whose tokens may still be valid, newest first (also prunes the expired ones). */
  retained(): SigningKey[] {
    const now = this.nowSeconds();
    const keep: SigningKey[] = [];
    for (let i = 0; i < this.keys.length; i++) {
      const replacedAt = i === 0 ? undefined : this.keys[i - 1].createdAt;
      if (replacedAt === undefined || now < replacedAt + this.options.retentionSeconds) keep.push(this.keys[i]);
      else void this.forget(this.keys[i]);
    }
    this.keys = keep;
    return keep;
  }

  /** The retained key with this kid; rescans the directory (rate-limited) when it is unknown. */
  async find(kid: string): Promise<SigningKey | undefined> {
    const hit = this.retained().find((k) => k.kid === kid);
    if (hit !== undefined || this.options.now() - this.lastScanMs < RESCAN_INTERVAL_MS) return hit;
    await this.scan();
    return this.retained().find((k) => k.kid === kid);
  }

  private async rotate(): Promise<SigningKey> {
    const { algorithm, dir, logger } = this.options;
    const pair = await generateKeyPair(algorithm, { extractable: true });
    const privateJwk = await exportJWK(pair.privateKey);
    const kid = await calculateJwkThumbprint(privateJwk);
    const createdAt = this.nowSeconds();
    const stored: JWK = { ...privateJwk, kid, alg: algorithm, use: 'sig', iat: createdAt } as JWK;
    const file = join(dir, `${kid}${FILE_SUFFIX}`);
    await writeFile(`${file}.tmp`, JSON.stringify(stored), { mode: 0o600, flag: 'w' });
    await rename(`${file}.tmp`, file);
    const key = await toSigningKey(stored, algorithm, createdAt);
    this.keys = [key, ...this.keys.filter((k) => k.kid !== kid)];
    logger.info({ kid, alg: algorithm }, 'identity signing key created');
    return key;
  }

  /** Loads every key file of the directory; unreadable files are skipped with a warning naming the file. */
  private async scan(): Promise<void> {
    this.lastScanMs = this.options.now();
    const names = (await readdir(this.options.dir)).filter((n) => n.endsWith(FILE_SUFFIX));
    const loaded: SigningKey[] = [];
    for (const name of names) {
      const known = this.keys.find((k) => `${k.kid}${FILE_SUFFIX}` === name);
      if (known !== undefined) {
        loaded.push(known);
        continue;
      }
      try {
        const jwk = JSON.parse(await readFile(join(this.options.dir, name), 'utf8')) as JWK & { iat?: unknown };
        const alg = jwk.alg as SigningAlgorithm;
        if (!SIGNING_ALGORITHMS.includes(alg) || typeof jwk.iat !== 'number' || typeof jwk.kid !== 'string') {
          throw new Error('not a signing key file');
        }
        loaded.push(await toSigningKey(jwk, alg, jwk.iat));
      } catch {
        this.options.logger.warn({ file: name }, 'ignoring unreadable signing key file');
      }
    }
    this.keys = loaded.sort((a, b) => b.createdAt - a.createdAt || (a.kid < b.kid ? -1 : 1));
  }

  private async forget(key: SigningKey): Promise<void> {
    try {
      await unlink(join(this.options.dir, `${key.kid}${FILE_SUFFIX}`));
      this.options.logger.info({ kid: key.kid }, 'identity signing key retired');
    } catch {
      // Already removed (by a sibling process): nothing to do.
    }
  }
}

async function toSigningKey(jwk: JWK, alg: SigningAlgorithm, createdAt: number): Promise<SigningKey> {
  const privateKey = (await importJWK(jwk, alg)) as CryptoKey;
  // An allow-list of public members, so nothing private (d, p, q, …) or unexpected is ever published.
  const publicJwk: JWK = { kty: jwk.kty, crv: jwk.crv, x: jwk.x, kid: jwk.kid, alg, use: 'sig' };
  if (jwk.y !== undefined) publicJwk.y = jwk.y;
  const publicKey = (await importJWK(publicJwk, alg)) as CryptoKey;
  return { kid: jwk.kid as string, alg, createdAt, privateKey, publicKey, publicJwk };
}
