// `dpg protect`: one payload from a file or stdin through the engine. JSON, XML and SQL are
// protected whole and written in one piece; LIST streams record by record, so a file of any size
// runs in bounded memory. With --output FILE the result goes to a temporary file renamed into
// place only on success: an error never leaves a partial file.

import { createReadStream, openSync, readFileSync, renameSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ConfigError, DpgError } from '../../core/errors.ts';
import { DATA_SET_TYPES, JOB_TYPES, parseDataSetType, type DataSetType, type ProtectSummary } from '../../core/types.ts';
import { integerFlag, parseFlags, UsageError, type CliIo, type Command, type FlagSpec } from '../command.ts';

export async function readInput(file: string | undefined, io: CliIo): Promise<string> {
  if (file !== undefined && file !== '-') {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw cannotRead(err);
    }
  }
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

function cannotRead(err: unknown): DpgError {
  return new DpgError('INVALID_REQUEST', `Cannot read input file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
}

/** `--type` from a file name: undefined when the extension says nothing we know. */
export function dataSetTypeFromExtension(file: string): DataSetType | undefined {
  const ext = extname(file).toLowerCase();
  if (ext === '.json') return 'JSON';
  if (ext === '.xml') return 'XML';
  if (ext === '.sql') return 'SQL';
  if (ext === '.csv' || ext === '.tsv' || ext === '.txt') return 'LIST';
  return undefined;
}

const INT32_MAX = 2147483647;

const options = {
  manifest: { type: 'string', short: 'm', value: 'NAME', help: 'manifest to apply (required)' },
  job: { type: 'string', short: 'j', value: 'JOBTYPE', help: 'job type (required; see below)' },
  type: { type: 'string', short: 't', value: 'TYPE', help: 'JSON, XML, SQL or LIST; default from the file extension, else JSON' },
  output: { type: 'string', short: 'o', value: 'FILE', help: 'write here (atomically: temp file + rename) instead of stdout' },
  dialect: { type: 'string', value: 'D', help: 'SQL dialect (mysql, mariadb, postgresql, transactsql, sqlite, bigquery, snowflake)' },
  country: { type: 'string', value: 'CC', help: 'destination country code (ISO 3166-1 alpha-2)' },
  'owning-country': { type: 'string', value: 'CC', help: 'country the data comes from' },
  'third-party': { type: 'string', value: 'N', help: 'third-party id (0 to 2147483647): separates pseudonyms per partner' },
  'data-usage': { type: 'string', value: 'N', help: 'data usage id (0 to 2147483647)' },
  'org-wide': { type: 'boolean', help: 'one pseudonym across the organisation (ignores third party and usage)' },
  'snapshot-date': { type: 'string', value: 'ISO', help: 'Reconstruct/Decrypt only: key versions active at this instant (with a zone, not future)' },
  silent: { type: 'boolean', help: 'replace values that cannot be processed instead of failing' },
  'protect-nulls': { type: 'boolean', help: 'protect null values too' },
  'preserve-length': { type: 'boolean', help: 'keep string lengths (strict FPE domain rule)' },
  'restricted-text': { type: 'string', value: 'TEXT', help: 'text standing in for restricted cells' },
  config: { type: 'string', short: 'c', value: 'FILE', help: 'gateway config (default DPG_CONFIG, else config/gateway.yaml)' },
} satisfies FlagSpec;

export const protectCommand: Command = {
  name: 'protect',
  summary: 'protect a payload from a file or stdin and write it to stdout or a file',
  usage: `dpg protect --manifest NAME --job JOBTYPE [--type JSON|XML|SQL|LIST] [--output FILE] [flags] [FILE|-]
    Protects a payload from FILE (or stdin) with the same engine and config as dpg serve, and
    writes the result to stdout (or --output FILE).`,
  options,
  details: `Job types: ${JOB_TYPES.join(', ')} (any letter case).
Data types: ${DATA_SET_TYPES.join(', ')}. Without --type: .json → JSON, .xml → XML, .sql → SQL,
  .csv/.tsv/.txt → LIST; stdin is JSON.
LIST streams row by row (bounded memory); on stdout, an error after the first rows ends the
  output early with a non-zero exit: use --output for all-or-nothing. Other types write only
  when everything succeeded. Files written with --output have mode 0600.
Reconstruct and Decrypt never create a keyring: they need the one that protected the data.
Examples:
  echo '{"cardNumber":"4111 1111 1111 1111"}' | dpg protect -m customer -j Mask
  dpg protect -m customer -j Pseudonymise --third-party 7 customers.csv -o customers-p.csv`,
  async run(args, io) {
    const { values: v, positionals } = parseFlags(args, options);
    if (positionals.length > 1) throw new UsageError('protect takes at most one input file');
    if (!v.manifest) throw new UsageError('--manifest is required');
    if (!v.job) throw new UsageError('--job is required');
    const file = positionals[0] === '-' ? undefined : positionals[0];
    const dataSetType = chooseType(v.type, file);
    const thirdPartyId = integerFlag(v['third-party'], 'third-party', { min: 0, max: INT32_MAX });
    const dataUsageId = integerFlag(v['data-usage'], 'data-usage', { min: 0, max: INT32_MAX });

    // Loaded here, not at the top: `dpg --help` and the other commands never pay for the engine.
    const [{ parseJobRequest }, { loadConfig }, { buildEngine }] = await Promise.all([
      import('../../engine/request.ts'),
      import('../../config/load.ts'),
      import('../../engine/build.ts'),
    ]);
    const job = parseJobRequest({
      manifestName: v.manifest,
      jobType: v.job,
      dataSetType,
      sqlDialect: v.dialect,
      countryCode: v.country,
      dataOwningCountryCode: v['owning-country'],
      thirdPartyId,
      dataUsageId,
      isDataConsistentAcrossOrganization: v['org-wide'],
      snapshotDate: v['snapshot-date'],
      silentMode: v.silent,
      protectNullValues: v['protect-nulls'],
      preserveStringLength: v['preserve-length'],
      useRestrictedText: v['restricted-text'] !== undefined ? true : undefined,
      restrictedText: v['restricted-text'],
    });
    const { config, problems } = loadConfig({ file: v.config });
    if (!config) throw new ConfigError(problems);
    const reverses = job.jobType === 'Reconstruct' || job.jobType === 'Decrypt';
    const { engine } = buildEngine(config, undefined, {
      createKeyring: !reverses,
      onKeyringCreated: (path) => io.stderr.write(`dpg: generated a development keyring at ${path}\n`),
    });
    engine.prepare(job); // unknown manifest or job type: fail before reading any input

    let summary: ProtectSummary;
    if (dataSetType === 'LIST') {
      const input = openInput(file, io);
      const result = engine.protectToCsv(job, input);
      summary = await writeStream(result.output, result.summary, v.output, io);
    } else {
      const text = await readInput(file, io);
      // Whole result first, then one write: an error leaves no output rather than half-protected.
      const result = engine.protectDocument(job, text);
      const out = typeof result.dataSet === 'string' ? result.dataSet : JSON.stringify(result.dataSet);
      writeText(out.endsWith('\n') ? out : `${out}\n`, v.output, io);
      summary = result.summary;
    }
    if (summary.failed > 0) io.stderr.write(`dpg: ${summary.failed} value(s) replaced (silent mode)\n`);
    return 0;
  },
};

function chooseType(flag: string | undefined, file: string | undefined): DataSetType {
  if (flag !== undefined) {
    const type = parseDataSetType(flag);
    if (!type) throw new UsageError(`--type must be one of ${DATA_SET_TYPES.join(', ')}`);
    return type;
  }
  if (file === undefined) return 'JSON';
  const inferred = dataSetTypeFromExtension(file);
  if (!inferred) {
    const ext = extname(file);
    throw new UsageError(
      `cannot tell the data type of ${JSON.stringify(basename(file).slice(0, 80))} from its extension${ext ? ` (${ext})` : ''}: give --type ${DATA_SET_TYPES.join('|')}`,
    );
  }
  return inferred;
}

/** The input as a stream; a file that cannot be opened is a clear error before anything starts. */
function openInput(file: string | undefined, io: CliIo): Readable {
  if (file === undefined) return io.stdin as Readable;
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw cannotRead(err);
  }
  return createReadStream('', { fd, highWaterMark: 256 * 1024 });
}

/** A private temporary name beside the target: rename is atomic within one directory. */
function temporaryBeside(target: string): string {
  return join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
}

function writeText(text: string, output: string | undefined, io: CliIo): void {
  if (output === undefined) {
    io.stdout.write(text);
    return;
  }
  const temporary = temporaryBeside(output);
  try {
    writeFileSync(temporary, text, { flag: 'wx', mode: 0o600 });
    renameSync(temporary, output);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw cannotWrite(err);
  }
}

async function writeStream(output: Readable, summary: Promise<ProtectSummary>, target: string | undefined, io: CliIo): Promise<ProtectSummary> {
  // The summary settles with the output (a failure rejects both): observe it at once so a
  // rejection is never reported as unhandled while the pipeline is still unwinding.
  summary.catch(() => undefined);
  if (target === undefined) {
    await pipeline(output, io.stdout as Writable, { end: false });
    return summary;
  }
  const temporary = temporaryBeside(target);
  let sink: Writable;
  try {
    sink = createWriteStream(temporary, { flags: 'wx', mode: 0o600 });
  } catch (err) {
    throw cannotWrite(err);
  }
  try {
    await pipeline(output, sink);
    const result = await summary;
    renameSync(temporary, target);
    return result;
  } catch (err) {
    rmSync(temporary, { force: true });
    if ((err as NodeJS.ErrnoException).syscall !== undefined && !(err instanceof DpgError)) throw cannotWrite(err);
    throw err;
  }
}

function cannotWrite(err: unknown): DpgError {
  return new DpgError('INVALID_REQUEST', `Cannot write the output file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
}
