// POST /api/protect: one JSON, XML or SQL document in a JSON body, protected in memory (DESIGN §4).
// The body's work — parsing, protecting, writing the answer — is protect-envelope.ts. A heavy body
// (its byte length weighted by X-Data-Set-Type, offload-cost.ts) goes to a protection worker as the
// chunks the socket delivered, moved rather than copied and joined there, and its answer's bytes
// come back the same way: the event loop only reads the body, checks the client's right to the job
// the worker read from it, and writes.

import { DpgError } from '../../core/errors.ts';
import type { DataSetType, JobSpec, ProtectSummary } from '../../core/types.ts';
import { bytesCost } from '../../engine/offload-cost.ts';
import { joinChunks } from '../../core/read-limited.ts';
import { asBuffer, transferOfAll, type BytesResult } from '../../engine/worker-tasks.ts';
import { authenticate } from './authenticate.ts';
import { noteJob, type Exchange, type HttpDeps } from './exchange.ts';
import { bodyEncodingHeader, dataSetTypeHeader, mediaType, sqlDialectHeader } from './protect-headers.ts';
import { openEnvelope, type EnvelopeHeaders } from './protect-envelope.ts';
import { readBodyChunks } from './read-body.ts';

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
  const headers: EnvelopeHeaders = {
    dataSetType,
    encoding,
    sqlDialect: sqlDialectHeader(req),
    requestId: ex.clientRequestId,
    fallbackRequestId: ex.requestId,
    maxDepth: deps.config.limits.maxDepth,
  };

  const body = await readBodyChunks(req, deps.config.http.maxBodyBytes);
  const authorize = (job: JobSpec): true => {
    noteJob(ex, job, deps.engine);
    deps.identity.authorize(principal, job);
    return true;
  };
  // A heavy document is protected in a worker (docs/operations.md, Workers): other requests go on meanwhile.
  const running = deps.engine.offload(bytesCost(dataSetType, body.size), { kind: 'envelope', bytes: body.chunks, headers }, {
    transfer: transferOfAll(body.chunks),
    onAsk: (job) => authorize(job as JobSpec),
  });
  let payload: Buffer;
  let summary: ProtectSummary;
  let requestId: string;
  if (running) {
    const result = (await running) as BytesResult;
    payload = asBuffer(result.bytes);
    summary = result.summary;
    requestId = ex.requestId; // noteJob set it to the job's
  } else {
    const envelope = openEnvelope(joinChunks(body), headers);
    authorize(envelope.job);
    ({ payload, summary } = envelope.protect(deps.engine));
    requestId = envelope.job.context.requestId;
  }
  res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': payload.length,
    'Cache-Control': 'no-store',
    'X-Request-Id': requestId,
  });
  res.end(payload);
  return summary;
}
