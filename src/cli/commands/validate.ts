// `dpg validate`: loads the config, the keyring and every manifest; any problem is printed with file:line.

import { ConfigError, formatConfigProblem } from '../../core/errors.ts';
import { parseFlags, type Command, type FlagSpec } from '../command.ts';

const options = {
  config: { type: 'string', short: 'c', value: 'FILE', help: 'gateway config (default DPG_CONFIG, else config/gateway.yaml)' },
} satisfies FlagSpec;

export const validateCommand: Command = {
  name: 'validate',
  summary: 'check the config, the keyring and every manifest',
  usage: `dpg validate [--config FILE]
    Checks the config, the keyring and every manifest; prints each problem with file and line
    and exits 1, or prints the config, the data directory, the keyring's fingerprint, keys and
    key check values (compare them across replicas; never key bytes) and what each manifest does.
    Under NODE_ENV=production a generated keyring (keys.source: generated) is a problem. Warns about a field one job type protects and another leaves in clear (an
    error in a manifest with strict: true), about a field matched by several names without a
    keyName (its keys follow the first), and about proxy routes without a port (they match every
    port, so dpg capture captures every port).`,
  options,
  async run(args, io) {
    const { values } = parseFlags(args, options);
    const [{ loadConfig }, { buildEngine, checkConfigReferences }] = await Promise.all([import('../../config/load.ts'), import('../../engine/build.ts')]);
    const { config, problems } = loadConfig({ file: values.config });
    if (!config) throw new ConfigError(problems);
    const { engine, keyring } = buildEngine(config, undefined, {
      onKeyringCreated: (path) => io.stderr.write(`dpg: generated a development keyring at ${path}\n`),
    });
    const refs = checkConfigReferences(config, engine);
    if (refs.length > 0) throw new ConfigError(refs);
    io.stdout.write(`config ${config.file}: ok\ndata directory ${config.dataDir}\n`);
    const { unportedRoutes, unportedWarning } = await import('../../capture/rules.ts');
    const unported = config.proxy.enabled ? unportedRoutes(config.proxy.routes ?? []) : [];
    if (unported.length > 0) io.stdout.write(`warning: proxy: ${unportedWarning(unported)}\n`);
    const { fingerprintKeyring } = await import('../../crypto/keyring-fingerprint.ts');
    const keyringId = fingerprintKeyring(keyring);
    io.stdout.write(`keyring fingerprint ${keyringId.fingerprint} (keys.source ${config.keys.source})\n`);
    for (const line of keyring.explain()) io.stdout.write(`key ${line}\n`);
    for (const check of keyringId.versions) io.stdout.write(`key check value ${check}\n`);
    for (const warning of keyring.retiredNowWarnings(new Date())) io.stdout.write(`warning: ${warning}\n`);
    for (const name of engine.manifestNames()) {
      const manifest = engine.manifest(name)!;
      for (const warning of manifest.warnings) io.stdout.write(`warning: ${formatConfigProblem(warning)}\n`);
      io.stdout.write(`${manifest.explain().join('\n')}\n`);
    }
    return 0;
  },
};
