// `dpg protect`: one payload from a file or stdin through the engine, the whole result to stdout.

import { readFileSync } from 'node:fs';
import { ConfigError, DpgError } from '../../core/errors.ts';
import { loadConfig } from '../../config/load.ts';
import { parseJobRequest } from '../../engine/request.ts';
import { buildEngine } from '../../engine/build.ts';
import { parseFlags, UsageError, type CliIo, type Command } from '../command.ts';

export async function readInput(file: string | undefined, io: CliIo): Promise<string> {
  if (file !== undefined && file !== '-') {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new DpgError('INVALID_REQUEST', `Cannot read input file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

export const protectCommand: Command = {
  name: 'protect',
  summary: 'protect a payload from a file or stdin and write it to stdout',
  usage: `dpg protect --manifest NAME --job JOBTYPE [--type JSON|XML|SQL|LIST] [--dialect D]
            [--country CC] [--owning-country CC] [--third-party N] [--data-usage N] [--org-wide]
            [--snapshot-date ISO] [--silent] [--protect-nulls] [--preserve-length]
            [--restricted-text TEXT] [--config FILE] [FILE|-]
    Protects a payload from FILE (or stdin) and writes the result to stdout.`,
  async run(args, io) {
    const { values, positionals } = parseFlags(args, {
      manifest: { type: 'string', short: 'm' },
      job: { type: 'string', short: 'j' },
      type: { type: 'string', short: 't' },
      dialect: { type: 'string' },
      country: { type: 'string' },
      'owning-country': { type: 'string' },
      'third-party': { type: 'string' },
      'data-usage': { type: 'string' },
      'org-wide': { type: 'boolean' },
      'snapshot-date': { type: 'string' },
      silent: { type: 'boolean' },
      'protect-nulls': { type: 'boolean' },
      'preserve-length': { type: 'boolean' },
      'restricted-text': { type: 'string' },
      config: { type: 'string' },
    });
    if (positionals.length > 1) throw new UsageError('protect takes at most one input file');
    const v = values as Record<string, string | boolean | undefined>;
    if (!v.manifest) throw new UsageError('--manifest is required');
    if (!v.job) throw new UsageError('--job is required');
    const job = parseJobRequest({
      manifestName: v.manifest,
      jobType: v.job,
      dataSetType: v.type ?? 'JSON',
      sqlDialect: v.dialect,
      countryCode: v.country,
      dataOwningCountryCode: v['owning-country'],
      thirdPartyId: v['third-party'],
      dataUsageId: v['data-usage'],
      isDataConsistentAcrossOrganization: v['org-wide'],
      snapshotDate: v['snapshot-date'],
      silentMode: v.silent,
      protectNullValues: v['protect-nulls'],
      preserveStringLength: v['preserve-length'],
      useRestrictedText: v['restricted-text'] !== undefined ? true : undefined,
      restrictedText: v['restricted-text'],
    });
    const { config, problems } = loadConfig({ file: v.config as string | undefined });
    if (!config) throw new ConfigError(problems);
    const { engine } = buildEngine(config);
    const input = await readInput(positionals[0], io);
    // Whole result first, then one write: an error leaves stdout empty rather than half-protected.
    const result = engine.protectDocument(job, input);
    const text = typeof result.dataSet === 'string' ? result.dataSet : JSON.stringify(result.dataSet);
    io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
    if (result.summary.failed > 0) io.stderr.write(`dpg: ${result.summary.failed} value(s) replaced (silent mode)\n`);
    return 0;
  },
};
