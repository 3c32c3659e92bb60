// The body of POST /api/protect, from its bytes to the answer's bytes: the JSON envelope parsed, the
// job read from it, the dataSet protected, the answer written. Two steps, because the client's
// right to run the job is checked on the event loop between them (identity lives there). Both
// steps run in one place — inline for a light body, in a protection worker for a heavy one (the
// bytes go there unparsed; protect-route.ts) — so both give the same bytes.
// A JSON dataSet given as an object or array is protected as the text the client wrote: its span
// is found in the raw body, protected in place, and written into the answer as it stands, so its
// untouched values (big integers, key order, spacing, escapes) come back byte for byte.

import { DpgError } from '../../core/errors.ts';
import type { DataSetType, JobSpec, ProtectSummary } from '../../core/types.ts';
import type { Engine } from '../../engine/types.ts';
import { topLevelMember } from '../../formats/json/text.ts';
import { decodeBase64Strict } from './base64-decoder.ts';
import { jobOfBody, parseJsonObject } from './exchange.ts';
import { decodeUtf8, type BodyEncoding } from './protect-headers.ts';

/** What the request's headers said, read on the event loop before the body. */
export interface EnvelopeHeaders {
  readonly dataSetType: DataSetType;
  readonly encoding: BodyEncoding;
  readonly sqlDialect: string | undefined;
  readonly requestId: string | undefined;
  readonly fallbackRequestId: string;
  readonly maxDepth: number;
}

export interface OpenEnvelope {
  readonly job: JobSpec;
  /** Protects the dataSet and writes the whole answer body (UTF-8). */
  protect(engine: Pick<Engine, 'protectDocument'>): { payload: Buffer; summary: ProtectSummary };
}

/** Step one: the body parsed and its job validated; nothing protected yet. */
export function openEnvelope(bytes: Buffer, h: EnvelopeHeaders): OpenEnvelope {
  const text = decodeUtf8(bytes, 'The request body');
  const written = h.dataSetType === 'JSON' && h.encoding !== 'base64' ? writtenDataSet(text, h.maxDepth) : undefined;
  const body = written !== undefined ? written.rest : parseJsonObject(text, 'The request body');
  const job = jobOfBody(body, { dataSetType: h.dataSetType, sqlDialect: h.sqlDialect, requestId: h.requestId, fallbackRequestId: h.fallbackRequestId });
  return {
    job,
    protect(engine) {
      let asWritten = written?.dataSet;
      let input: unknown = asWritten;
      if (asWritten === undefined) {
        const dataSet = Object.hasOwn(body, 'dataSet') ? body.dataSet : undefined;
        input = dataSetInput(dataSet, h.dataSetType, h.encoding);
        // An object or array dataSet: the engine gets its exact text, not the parsed value.
        if (typeof input === 'object') asWritten = dataSetText(text, h.maxDepth);
      }
      const result = engine.protectDocument(job, asWritten ?? input);
      const dataSetJson = asWritten !== undefined ? (result.dataSet as string) : JSON.stringify(dataSetOutput(result.dataSet, h.encoding));
      const rest = JSON.stringify({
        requestId: job.context.requestId,
        manifestName: job.manifestName,
        jobType: job.jobType,
        dataSetType: job.dataSetType,
        summary: result.summary,
      });
      // dataSet first, as the answer always had it; the rest is ordinary JSON.
      return { payload: Buffer.from(`{"dataSet":${dataSetJson},${rest.slice(1)}`, 'utf8'), summary: result.summary };
    },
  };
}

/**
 * The common body (a JSON object or array as its dataSet) read without building the dataSet's
 * values, which are protected from their text anyway: the scanner finds the member and checks the
 * whole body's syntax, and JSON.parse reads only the job fields around it. Anything else — another
 * kind of dataSet, a body the scanner refuses (bad syntax, too deep, dataSet given twice) — returns
 * undefined, and the body takes the full path (JSON.parse of all of it), so every answer and error,
 * and the order in which they are found, stays what it was.
 */
function writtenDataSet(text: string, maxDepth: number): { rest: Record<string, unknown>; dataSet: string } | undefined {
  let span: { start: number; end: number } | undefined;
  try {
    span = topLevelMember(text, 'dataSet', { maxDepth: maxDepth + 1 }, 'The request body');
  } catch {
    return undefined;
  }
  if (span === undefined) return undefined;
  const first = text.charCodeAt(span.start);
  if (first !== 0x7b && first !== 0x5b) return undefined; // not { or [
  let rest: unknown;
  try {
    rest = JSON.parse(`${text.slice(0, span.start)}null${text.slice(span.end)}`);
  } catch {
    return undefined;
  }
  return { rest: rest as Record<string, unknown>, dataSet: text.slice(span.start, span.end) };
}

/**
 * What the engine gets: for JSON an object/array as parsed, or a string of JSON text (returned as
 * a string); for XML and SQL a string; with base64, the decoded UTF-8 text of any type.
 */
function dataSetInput(dataSet: unknown, type: DataSetType, encoding: BodyEncoding): unknown {
  if (dataSet === undefined || dataSet === null) throw new DpgError('INVALID_REQUEST', 'Field dataSet is required');
  if (encoding === 'base64') {
    if (typeof dataSet !== 'string') throw new DpgError('INVALID_REQUEST', 'Field dataSet must be a base64 string (X-Body-Encoding: base64)');
    return decodeUtf8(decodeBase64Strict(dataSet), 'The decoded dataSet');
  }
  if (type === 'JSON') {
    if (typeof dataSet === 'object' || typeof dataSet === 'string') return dataSet;
    throw new DpgError('INVALID_REQUEST', 'Field dataSet must be a JSON object or array (or a string of JSON text)');
  }
  if (typeof dataSet !== 'string') throw new DpgError('INVALID_REQUEST', `Field dataSet must be a string for ${type}`);
  return dataSet;
}

/**
 * The text of the body's `dataSet` member as the client wrote it. The body parsed already, so only
 * a duplicate `dataSet` (which JSON.parse would settle silently, last one wins) can be refused here.
 */
function dataSetText(body: string, maxDepth: number): string {
  const span = topLevelMember(body, 'dataSet', { maxDepth: maxDepth + 1 }, 'The request body');
  if (span === undefined) throw new DpgError('INVALID_REQUEST', 'Field dataSet is required');
  return body.slice(span.start, span.end);
}

/** Same shape and encoding as the input: base64 in, base64 out. */
function dataSetOutput(dataSet: unknown, encoding: BodyEncoding): unknown {
  if (encoding !== 'base64') return dataSet;
  const text = typeof dataSet === 'string' ? dataSet : JSON.stringify(dataSet);
  return Buffer.from(text, 'utf8').toString('base64');
}
