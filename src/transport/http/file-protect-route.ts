// POST /file/protect: multipart metadata plus data (a file part, streamed, or metadata.dataSet),
// answered as a streamed CSV download. A failure after the first byte aborts the response.

import { Readable } from 'node:stream';
import { basename, extname } from 'node:path';
import busboy from 'busboy';
import { DpgError } from '../../core/errors.ts';
import type { DataSetType, JobSpec, ProtectSummary } from '../../core/types.ts';
import { scopeFor } from '../../identity/identity.ts';
import { checkPseudonymScope, DEFAULT_PSEUDONYM_SCOPE } from '../../identity/pseudonym-scope.ts';
import type { Principal } from '../../identity/types.ts';
import { authenticate } from './authenticate.ts';
import { jobOfBody, noteJob, parseJsonObject, type Exchange, type HttpDeps } from './exchange.ts';
import { bodyEncodingHeader, dataSetTypeHeader, decodeUtf8, mediaType, sqlDialectHeader, type BodyEncoding } from './protect-headers.ts';
import { checkDeclaredLength, tooLarge } from './read-body.ts';
import { Base64DecodeStream, decodeBase64Strict } from './base64-decoder.ts';
import { topLevelMember } from '../../formats/json/text.ts';

export const METADATA_PART = 'protectFileDataset';
const ALL_TYPES: readonly DataSetType[] = ['JSON', 'XML', 'SQL', 'LIST'];
const MAX_PARTS = 32;
/** Output held before the response is committed (see streamCsv). */
const HOLD_BYTES = 64 * 1024;
/** Multipart framing and part headers on top of the data itself. */
const MULTIPART_OVERHEAD = 64 * 1024;

interface FileRequest {
  readonly deps: HttpDeps;
  readonly ex: Exchange;
  readonly principal: Principal | undefined;
  readonly dataSetType: DataSetType;
  readonly encoding: BodyEncoding;
}

export async function handleFileProtect(deps: HttpDeps, ex: Exchange): Promise<ProtectSummary> {
  const { req } = ex;
  // A token header sent anyway (even a blank one) is verified and authorized as usual, never ignored.
  const tokenSent = req.headers['x-resource-token'] !== undefined || req.headers.authorization !== undefined;
  const needsToken = deps.config.http.requireTokenForFileProtect || tokenSent;
  const principal = needsToken ? await authenticate(req, deps.identity) : undefined;
  ex.audit.clientId = principal?.clientId;
  const dataSetType = dataSetTypeHeader(req, 'LIST', ALL_TYPES);
  const encoding = bodyEncodingHeader(req);
  if (mediaType(req) !== 'multipart/form-data') {
    throw new DpgError('INVALID_REQUEST', 'Content-Type must be multipart/form-data');
  }
  const { maxBodyBytes, maxFileBytes } = deps.config.http;
  // base64 data is 4/3 of the bytes it carries; the cap applies to the decoded data as well below.
  const transferCap = (encoding === 'base64' ? Math.ceil((maxFileBytes * 4) / 3) + 4 : maxFileBytes) + maxBodyBytes + MULTIPART_OVERHEAD;
  checkDeclaredLength(req, transferCap);
  return runMultipart({ deps, ex, principal, dataSetType, encoding });
}

function runMultipart(request: FileRequest): Promise<ProtectSummary> {
  const { deps, ex, encoding } = request;
  const { req, res } = ex;
  const { maxBodyBytes, maxFileBytes } = deps.config.http;

  return new Promise<ProtectSummary>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        limits: {
          fieldSize: maxBodyBytes,
          fileSize: encoding === 'base64' ? Math.ceil((maxFileBytes * 4) / 3) + 4 : maxFileBytes,
          parts: MAX_PARTS,
        },
      });
    } catch {
      reject(new DpgError('INVALID_REQUEST', 'The multipart/form-data body has no valid boundary'));
      return;
    }

    let job: JobSpec | undefined;
    let metadataDataSet: Buffer | undefined;
    let dataStarted = false;
    // A metadata part sent as a file is read asynchronously; later parts wait for it.
    let metadataReady: Promise<void> = Promise.resolve();
    let metadataSeen = false;
    let settled = false;
    let input: Readable | undefined;
    let output: Readable | undefined;

    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      input?.destroy();
      output?.destroy();
      reject(err);
    };
    const succeed = (summary: ProtectSummary): void => {
      if (settled) return;
      settled = true;
      resolve(summary);
    };

    const acceptMetadata = (text: string): void => {
      if (job !== undefined) throw new DpgError('INVALID_REQUEST', 'Only one metadata part may be sent');
      const meta = parseJsonObject(text, 'The metadata part');
      job = jobOfBody(
        meta,
        { dataSetType: request.dataSetType, sqlDialect: sqlDialectHeader(req), requestId: ex.clientRequestId, fallbackRequestId: ex.requestId },
        'LIST',
      );
      noteJob(ex, job, deps.engine);
      if (request.principal !== undefined) deps.identity.authorize(request.principal, job);
      else requireTokenUnlessProtectScope(job);
      const field = Object.hasOwn(meta, 'dataSet') ? 'dataSet' : Object.hasOwn(meta, 'rawDataSet') ? 'rawDataSet' : undefined;
      const inline = field === undefined ? undefined : meta[field];
      if (inline !== undefined && inline !== null) {
        // A JSON object or array is taken as the client wrote it (numbers keep their digits), not re-serialised.
        const asWritten = (): string => {
          const span = topLevelMember(text, field!, { maxDepth: deps.config.limits.maxDepth + 1 }, 'The metadata part');
          return span === undefined ? JSON.stringify(inline) : text.slice(span.start, span.end);
        };
        metadataDataSet = inlineData(inline, job.dataSetType, encoding, maxFileBytes, asWritten);
      }
    };

    const startProtection = (data: Readable, nameStem: string, fromMetadata: boolean): void => {
      if (job === undefined) throw new DpgError('INVALID_REQUEST', 'The metadata part must come before the file part');
      if (dataStarted || (!fromMetadata && metadataDataSet !== undefined)) {
        throw new DpgError('INVALID_REQUEST', 'Send the data either as metadata dataSet or as one file part, not both');
      }
      dataStarted = true;
      input = data;
      const started = deps.engine.protectToCsv(job, data);
      output = started.output;
      started.summary.catch(fail);
      streamCsv(output, started.summary, `${nameStem}-protected.csv`);
    };

    const streamCsv = (csv: Readable, summary: Promise<ProtectSummary>, filename: string): void => {
      // The first HOLD_BYTES are held back: a small file that fails gets a clean problem response
      // instead of a cut connection. Past that, bytes flow straight through with backpressure.
      let held: Buffer[] | undefined = [];
      let heldBytes = 0;
      const commit = (): void => {
        if (held === undefined) return;
        res.writeHead(200, {
          'Content-Type': 'text/csv; charset=utf-8',
          'Content-Disposition': `attachment; filename="${filename}"`,
          'Cache-Control': 'no-store',
          'X-Request-Id': ex.requestId,
        });
        const chunks = held;
        held = undefined;
        for (const chunk of chunks) res.write(chunk);
      };
      csv.on('data', (data: Buffer | string) => {
        if (settled) return;
        const chunk = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
        if (held !== undefined) {
          held.push(chunk);
          heldBytes += chunk.length;
          if (heldBytes >= HOLD_BYTES) commit();
          return;
        }
        if (!res.write(chunk)) csv.pause();
      });
      res.on('drain', () => csv.resume());
      csv.on('error', fail);
      csv.on('end', () => {
        // The last byte goes out only once the summary confirms every value was protected.
        summary.then((s) => {
          if (settled) return;
          commit();
          res.end();
          succeed(s);
        }, fail);
      });
    };

    parser.on('field', (name, value, info) => {
      if (settled) return;
      try {
        const isMetadata = name === METADATA_PART || (!metadataSeen && info.mimeType === 'application/json');
        if (!isMetadata) return;
        metadataSeen = true;
        if (info.valueTruncated) throw tooLarge(maxBodyBytes);
        acceptMetadata(value);
      } catch (err) {
        fail(err);
      }
    });

    parser.on('file', (name, stream, info) => {
      if (settled) {
        stream.resume();
        return;
      }
      const isMetadata = name === METADATA_PART || (!metadataSeen && info.mimeType === 'application/json');
      if (isMetadata) {
        metadataSeen = true;
        metadataReady = collect(stream, maxBodyBytes).then((bytes) => acceptMetadata(decodeUtf8(bytes, 'The metadata part')));
        metadataReady.catch(fail);
        return;
      }
      if (!metadataSeen) {
        stream.resume();
        fail(new DpgError('INVALID_REQUEST', 'The metadata part must come before the file part'));
        return;
      }
      const filename = info.filename;
      // Listened to at once: busboy may hit the cap before the metadata promise below settles.
      stream.on('limit', () => {
        const err = tooLarge(maxFileBytes);
        input?.destroy(err);
        fail(err);
      });
      metadataReady.then(() => {
        if (settled) {
          stream.resume();
          return;
        }
        let data: Readable = stream;
        if (encoding === 'base64') {
          const decoder = new Base64DecodeStream();
          decoder.on('error', fail);
          data = stream.pipe(decoder);
        }
        startProtection(data, fileStem(filename), false);
      }).catch((err: unknown) => {
        stream.resume();
        fail(err);
      });
    });

    parser.on('close', () => {
      metadataReady.then(() => {
        if (settled || dataStarted) return;
        if (job === undefined) {
          throw new DpgError('INVALID_REQUEST', `Missing metadata: send a JSON part named ${METADATA_PART} (or with Content-Type application/json)`);
        }
        if (metadataDataSet === undefined) {
          throw new DpgError('INVALID_REQUEST', 'Missing data: send dataSet in the metadata or a file part');
        }
        startProtection(Readable.from([metadataDataSet]), safeStem(job.manifestName), true);
      }).catch(fail);
    });

    parser.on('partsLimit', () => fail(new DpgError('INVALID_REQUEST', `At most ${MAX_PARTS} multipart parts are accepted`)));
    parser.on('error', () => fail(new DpgError('INVALID_REQUEST', 'The multipart/form-data body is malformed')));
    req.on('aborted', () => fail(new DpgError('INVALID_REQUEST', 'The request was aborted by the client')));
    res.on('close', () => {
      if (!res.writableFinished) fail(new DpgError('INVALID_REQUEST', 'The client closed the connection'));
    });
    req.pipe(parser);
  });
}

/**
 * With requireTokenForFileProtect off, a request without a token may only run the jobs of the
 * 'protect' scope: recovering clear values (Reconstruct, Decrypt) always needs a verified token.
 * It gets the pseudonym scope of a client configured without one (no ids, not org-wide).
 */
function requireTokenUnlessProtectScope(job: JobSpec): void {
  const needed = scopeFor(job.jobType);
  if (needed !== 'protect') {
    throw new DpgError(
      'UNAUTHENTICATED',
      `${job.jobType} needs a token with the '${needed}' scope: without a token /file/protect runs only protect-scope jobs`,
    );
  }
  checkPseudonymScope(DEFAULT_PSEUDONYM_SCOPE, job.context);
}

/** The data carried inside the metadata (small by construction: it came in a bounded part). */
function inlineData(value: unknown, type: DataSetType, encoding: BodyEncoding, limit: number, jsonAsWritten: () => string): Buffer {
  let bytes: Buffer;
  if (encoding === 'base64') {
    if (typeof value !== 'string') throw new DpgError('INVALID_REQUEST', 'Field dataSet must be a base64 string (X-Body-Encoding: base64)');
    bytes = decodeBase64Strict(value);
  } else if (typeof value === 'string') {
    bytes = Buffer.from(value, 'utf8');
  } else if (type === 'JSON' && typeof value === 'object') {
    bytes = Buffer.from(jsonAsWritten(), 'utf8');
  } else {
    throw new DpgError('INVALID_REQUEST', 'Field dataSet must be a string (or, for JSON, an object or array)');
  }
  if (bytes.length > limit) throw tooLarge(limit);
  return bytes;
}

function collect(stream: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        stream.resume();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    });
    stream.on('end', () => resolve(Buffer.concat(chunks, Math.min(size, limit))));
    stream.on('error', reject);
  });
}

/** A filename safe for a header: the upload's base name without extension, plain characters only. */
function fileStem(filename: string | undefined): string {
  if (filename === undefined || filename === '') return 'dataset';
  const base = basename(filename.replace(/\\/g, '/'));
  return safeStem(base.slice(0, base.length - extname(base).length));
}

function safeStem(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '').slice(0, 100);
  return cleaned === '' ? 'dataset' : cleaned;
}
