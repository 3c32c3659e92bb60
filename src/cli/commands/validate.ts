// `dpg validate`: loads the config, the keyring and every manifest; any problem is printed with file:line.

import { ConfigError, formatConfigProblem } from '../../core/errors.ts';
import { loadConfig } from '../../config/load.ts';
import { buildEngine, checkConfigReferences } from '../../engine/build.ts';
import { parseFlags, type Command } from '../command.ts';

export const validateCommand: Command = {
  name: 'validate',
  summary: 'check the config, the keyring and every manifest',
  usage: `dpg validate [--config FILE]
    Checks the config, the keyring and every manifest; prints each problem with file and line.
    Warns about a field one job type protects and another leaves in clear (an error in a
    manifest with strict: true), and about a field matched by several names without a keyName
    (its keys follow the first).`,
  run(args, io) {
    const { values } = parseFlags(args, { config: { type: 'string' } });
    const { config, problems } = loadConfig({ file: values.config as string | undefined });
    if (!config) throw new ConfigError(problems);
    const { engine, keyring } = buildEngine(config);
    const refs = checkConfigReferences(config, engine);
    if (refs.length > 0) throw new ConfigError(refs);
    io.stdout.write(`config ${config.file}: ok\n`);
    for (const line of keyring.explain()) io.stdout.write(`key ${line}\n`);
    for (const warning of keyring.retiredNowWarnings(new Date())) io.stdout.write(`warning: ${warning}\n`);
    for (const name of engine.manifestNames()) {
      const manifest = engine.manifest(name)!;
      for (const warning of manifest.warnings) io.stdout.write(`warning: ${formatConfigProblem(warning)}\n`);
      io.stdout.write(`${manifest.explain().join('\n')}\n`);
    }
    return 0;
  },
};
