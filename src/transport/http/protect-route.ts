// POST /api/protect: one JSON, XML or SQL document in a JSON body, protected in memory (DESIGN §4).

import { DpgError } from '../../core/errors.ts';
import type { DataSetType, ProtectSummary } from '../../core/types.ts';
import { parseJobRequest } from '../../engine/request.ts';
import { authenticate } from './authenticate.ts';
import { jobFieldsOf, noteJob, parseJsonObject, type Exchange, type HttpDeps } from './exchange.ts';
import { bodyEncodingHeader, dataSetTypeHeader, decodeUtf8, mediaType, sqlDialectHeader, type BodyEncoding } from './protect-headers.ts';
import { readBody } from './read-body.ts';
import { decodeBase64Strict } from './base64-decoder.ts';

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
  const body = parseJsonObject(decodeUtf8(bytes, 'The request body'), 'The request body');
  const job = parseJobRequest(
    jobFieldsOf(body, {
      dataSetType,
      sqlDialect: sqlDialectHeader(req),
      requestId: ex.clientRequestId,
      fallbackRequestId: ex.requestId,
    }),
  );
  noteJob(ex, job);
  deps.identity.authorize(principal, job);

  const input = dataSetInput(Object.hasOwn(body, 'dataSet') ? body.dataSet : undefined, dataSetType, encoding);
  const result = deps.engine.protectDocument(job, input);
  const dataSet = dataSetOutput(result.dataSet, encoding);

  const payload = JSON.stringify({
    dataSet,
    requestId: job.context.requestId,
    manifestName: job.manifestName,
    jobType: job.jobType,
    dataSetType: job.dataSetType,
    summary: result.summary,
  });
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

/** Same shape and encoding as the input: base64 in, base64 out. */
function dataSetOutput(dataSet: unknown, encoding: BodyEncoding): unknown {
  if (encoding !== 'base64') return dataSet;
  const text = typeof dataSet === 'string' ? dataSet : JSON.stringify(dataSet);
  return Buffer.from(text, 'utf8').toString('base64');
}
