// POST /api/protect: one JSON, XML or SQL document in a JSON body, protected in memory (DESIGN §4).
// A JSON dataSet given as an object or array is protected as the text the client wrote: its span
// is found in the raw body, protected in place, and written into the response as it stands, so its
// untouched values (big integers, key order, spacing, escapes) come back byte for byte.

import { DpgError } from '../../core/errors.ts';
import type { DataSetType, ProtectSummary } from '../../core/types.ts';
import { parseJobRequest } from '../../engine/request.ts';
import { authenticate } from './authenticate.ts';
import { jobFieldsOf, noteJob, parseJsonObject, type Exchange, type HttpDeps } from './exchange.ts';
import { bodyEncodingHeader, dataSetTypeHeader, decodeUtf8, mediaType, sqlDialectHeader, type BodyEncoding } from './protect-headers.ts';
import { readBody } from './read-body.ts';
import { decodeBase64Strict } from './base64-decoder.ts';
import { topLevelMember } from '../../formats/json/text.ts';

const DOCUMENT_TYPES: readonly DataSetType[] = ['JSON', 'XML', 'SQL'];

export async function handleProtect(deps: HttpDeps, ex: Exchange): Promise<ProtectSummary> {
  const { req, res } = ex;
  // Everything that needs only headers is checked before a byte of the body is read.
  const principal = await authenticate(req, deps.identity);
  ex.audit.clientId = principal.clientId;
  const dataSetType = dataSetTypeHeader(req, 'JSON', DOCUMENT_TYPES);
  const encoding = bodyEncodingHeader(req);
  const contentType = mediaType(req);
  if (contentType !== undefined && contentType !== 'application/json' && !contentType.endsWith('+json')) {
    throw new DpgError('INVALID_REQUEST', 'Content-Type must be application/json');
  }

  const bytes = await readBody(req, deps.config.http.maxBodyBytes);
  const text = decodeUtf8(bytes, 'The request body');
  const body = parseJsonObject(text, 'The request body');
  const job = parseJobRequest(
    jobFieldsOf(body, {
      dataSetType,
      sqlDialect: sqlDialectHeader(req),
      requestId: ex.clientRequestId,
      fallbackRequestId: ex.requestId,
    }),
  );
  noteJob(ex, job, deps.engine);
  deps.identity.authorize(principal, job);

  const dataSet = Object.hasOwn(body, 'dataSet') ? body.dataSet : undefined;
  const input = dataSetInput(dataSet, dataSetType, encoding);
  // An object or array dataSet: the engine gets its exact text, not the parsed value.
  const asWritten = typeof input === 'object' ? dataSetText(text, deps.config.limits.maxDepth) : undefined;
  // A heavy document is protected in a worker (docs/operations.md, Workers): other requests go on meanwhile.
  const result = await deps.engine.protectDocumentAsync(job, asWritten ?? input);
  const dataSetJson = asWritten !== undefined ? (result.dataSet as string) : JSON.stringify(dataSetOutput(result.dataSet, encoding));

  const rest = JSON.stringify({
    requestId: job.context.requestId,
    manifestName: job.manifestName,
    jobType: job.jobType,
    dataSetType: job.dataSetType,
    summary: result.summary,
  });
  // dataSet first, as the response always had it; the rest is ordinary JSON.
  const payload = `{"dataSet":${dataSetJson},${rest.slice(1)}`;
  res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
    'Cache-Control': 'no-store',
    'X-Request-Id': job.context.requestId,
  });
  res.end(payload);
  return result.summary;
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
