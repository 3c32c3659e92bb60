// Builds the engine a config describes: the keyring from its source, then the compiled manifests.
// Shared by `dpg serve` (through main.ts) and the CLI commands that need no listeners.

import type { ConfigProblem } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { parseJobType } from '../core/types.ts';
import type { GatewayConfig } from '../config/types.ts';
import { ensureDevKeyring, loadKeyringFile, loadKeyringFromEnv, type Keyring } from '../crypto/keyring.ts';
import { createEngine, type ProtectionEngine } from './engine.ts';

export function loadKeyring(config: GatewayConfig): Keyring {
  const keys = config.keys;
  if (keys.source === 'file') return loadKeyringFile(keys.file);
  if (keys.source === 'env') return loadKeyringFromEnv(keys.env);
  return loadKeyringFile(ensureDevKeyring(config.dataDir));
}

export function buildEngine(config: GatewayConfig, logger?: Logger): { engine: ProtectionEngine; keyring: Keyring } {
  const keyring = loadKeyring(config);
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
