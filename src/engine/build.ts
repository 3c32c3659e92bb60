// Builds the engine a config describes: the keyring from its source, then the compiled manifests.
// Shared by `dpg serve` (through main.ts) and the CLI commands that need no listeners.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, type ConfigProblem } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { parseJobType } from '../core/types.ts';
import type { GatewayConfig } from '../config/types.ts';
import { ensureDevKeyring, loadKeyringFile, loadKeyringFromEnv, type Keyring } from '../crypto/keyring.ts';
import { createEngine, type ProtectionEngine } from './engine.ts';

export interface KeyringOptions {
  /**
   * false: a missing generated keyring is an error instead of being created. Reconstruct and
   * Decrypt pass false: a new keyring cannot reverse anything and would give wrong values.
   */
  readonly createKeyring?: boolean;
  /** Told the path when a development keyring is generated (so the caller can say where). */
  readonly onKeyringCreated?: (path: string) => void;
  /** NODE_ENV; 'production' refuses the generated keyring. Default process.env.NODE_ENV. */
  readonly nodeEnv?: string;
}

/**
 * Why this config's keys may not be used under `nodeEnv`, or undefined. A generated keyring in
 * production is made per pod, in a volume that dies with it: replicas would pseudonymise the same
 * value differently and nothing protected before a restart could be reversed, without a word.
 */
export function productionKeysProblem(config: GatewayConfig, nodeEnv: string | undefined): ConfigProblem | undefined {
  if (nodeEnv !== 'production' || config.keys.source !== 'generated') return undefined;
  return {
    file: config.file,
    path: 'keys.source',
    message:
      'is `generated` (also the default when `keys` is absent), which is refused under NODE_ENV=production: every replica would make ' +
      'its own keyring and nothing protected could be reversed after a restart. Give every replica the same managed keyring: ' +
      '`keys: { source: file, file: <the keyring Secret mounted as a file> }` or `keys: { source: env, env: DPG_KEYRING }` (docs/keys.md)',
  };
}

export function loadKeyring(config: GatewayConfig, options: KeyringOptions = {}): Keyring {
  const keys = config.keys;
  const refused = productionKeysProblem(config, 'nodeEnv' in options ? options.nodeEnv : process.env.NODE_ENV);
  if (refused) throw new ConfigError([refused]);
  if (keys.source === 'file') return loadKeyringFile(keys.file);
  if (keys.source === 'env') return loadKeyringFromEnv(keys.env);
  const path = join(config.dataDir, DEV_KEYRING_FILE);
  if (!existsSync(path)) {
    if (options.createKeyring === false) {
      throw new ConfigError([
        {
          file: path,
          message:
            'no keyring here: Reconstruct and Decrypt need the keyring that protected the data (set DPG_DATA_DIR to its directory, or keys in the config)',
        },
      ]);
    }
    ensureDevKeyring(config.dataDir);
    options.onKeyringCreated?.(path);
  }
  return loadKeyringFile(path);
}

export function buildEngine(config: GatewayConfig, logger?: Logger, options: KeyringOptions = {}): { engine: ProtectionEngine; keyring: Keyring } {
  const keyring = loadKeyring(config, options);
  const engine = createEngine({
    manifestsDir: config.manifests,
    keyring,
    limits: config.limits,
    ...(logger ? { logger } : {}),
  });
  // Manifest warnings (job-type gaps, implicit key names) do not stop a gateway: say them once at start.
  for (const name of engine.manifestNames()) {
    const warnings = engine.manifest(name)!.warnings;
    if (warnings.length > 0) logger?.warn({ manifest: name, warnings: warnings.map((w) => `${w.line ?? '?'}: ${w.message}`) }, 'manifest warnings (see dpg validate)');
  }
  return { engine, keyring };
}

/** The generated development keyring's file name in the data directory (crypto/keyring.ts writes it). */
const DEV_KEYRING_FILE = 'keyring.yaml';

/** Cross-checks that need both config and manifests: proxy routes must name real manifests and job types. */
export function checkConfigReferences(config: GatewayConfig, engine: ProtectionEngine): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const route of config.proxy.routes) {
    for (const [phaseName, phase] of [
      ['request', route.request],
      ['response', route.response],
    ] as const) {
      if (!phase) continue;
      const where = `proxy.routes.${route.name}.${phaseName}`;
      const manifest = engine.manifest(phase.manifest);
      const jobType = parseJobType(phase.jobType);
      if (!manifest) problems.push({ file: config.file, path: where, message: `manifest ${phase.manifest} does not exist` });
      if (!jobType) problems.push({ file: config.file, path: where, message: `unknown job type ${phase.jobType}` });
      else if (manifest && !manifest.jobTypes.has(jobType)) {
        problems.push({ file: config.file, path: where, message: `manifest ${phase.manifest} defines no ${jobType} rules` });
      }
    }
  }
  return problems;
}
