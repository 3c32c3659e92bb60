// One phase of a route (request or response), compiled once: the validated job, and how a body of
// a given media type and the selected query parameters are protected with it.

import { DpgError } from '../../core/errors.ts';
import type { DataSetType, JobSpec, ProtectSummary, Scalar } from '../../core/types.ts';
import type { RoutePhase } from '../../config/types.ts';
import type { Engine, PreparedJob } from '../../engine/types.ts';
import { bytesCost } from '../../engine/offload-cost.ts';
import { asBuffer, transferOf, type BytesResult } from '../../engine/worker-tasks.ts';
import { protectDocumentBody } from './body-document.ts';
import type { FieldAction } from '../../formats/codec.ts';
import { parseJobRequest } from '../../engine/request.ts';
import { normalizeName } from '../../manifest/selectors.ts';
import { bodyKindOf, printableType, RefusedInputError, type BodyKind } from '../reading/body-kind.ts';
import { readBodyText } from '../reading/body-charset.ts';
import { nestedReadings, paramNameReadings, phpName } from '../reading/param-names.ts';
import { mediaTypeOf } from '../reading/routes.ts';
import type { GrpcPhase } from '../grpc-egress/contract.ts';

export { inferBodyKind } from '../reading/body-kind.ts';

/** What a phase did to one message; never holds values. */
export interface PhaseOutcome {
  readonly dataSetType: DataSetType | 'FORM' | undefined;
  readonly valuesProtected: number;
  readonly valuesFailed: number;
}

export interface CompiledPhase {
  readonly manifest: string;
  readonly jobType: string;
  /** True for Reconstruct and Decrypt, which restore values rather than protect them. */
  readonly reverse: boolean;
  /** True when the phase protects query-string parameters. */
  readonly protectsQuery: boolean;
  /**
   * The type a non-empty decoded body is read as (body-kind.ts); undefined: other content.
   * `routeContentType`: the route's `match.contentType`, for bodies without a type of their own.
   */
  kindOf(body: Buffer, contentType: string | undefined, routeContentType?: string): BodyKind | undefined;
  /**
   * Protects a decoded body of the given Content-Type, read as `kind` (default: `kindOf`; other
   * content is refused with 415). Empty bodies come back as they are.
   */
  protectBody(body: Buffer, contentType: string | undefined, requestId: string, kind?: BodyKind): { body: Buffer; outcome: PhaseOutcome };
  /**
   * protectBody for the exchange: a heavy body (its length weighted by its kind, offload-cost.ts) goes
   * to a protection worker as raw bytes, undecoded. `consume`: the caller reads `body` no more, so its
   * memory is moved to the worker rather than copied (the caller's Buffer is empty afterwards).
   */
  protectBodyAsync(
    body: Buffer,
    contentType: string | undefined,
    requestId: string,
    kind?: BodyKind,
    options?: { readonly consume?: boolean },
  ): Promise<{ body: Buffer; outcome: PhaseOutcome }>;
  /** Protects the selected parameters of a raw query string (without `?`); others stay byte for byte. */
  protectQuery(query: string, requestId: string): { query: string; valuesProtected: number };
  /** gRPC message protection, when the route names the message types (grpc-egress/contract.ts). */
  readonly grpc?: GrpcPhase;
}

const EMPTY: PhaseOutcome = { dataSetType: undefined, valuesProtected: 0, valuesFailed: 0 };

/**
 * Validates the phase's job fields once (parseJobRequest, the same rules as every door) and
 * returns the per-request protection functions. Throws DpgError INVALID_REQUEST on bad config.
 * `grpc`: for a route with message types, builds the phase's GrpcPhase from its job.
 */
export function compilePhase(phase: RoutePhase, engine: Engine, grpc?: (job: (requestId: string) => JobSpec) => GrpcPhase): CompiledPhase {
  const base = parseJobRequest(
    {
      manifestName: phase.manifest,
      jobType: phase.jobType,
      dataSetType: phase.dataSetType,
      countryCode: phase.countryCode,
      dataOwningCountryCode: phase.dataOwningCountryCode,
      thirdPartyId: phase.thirdPartyId,
      dataUsageId: phase.dataUsageId,
      isDataConsistentAcrossOrganization: phase.isDataConsistentAcrossOrganization,
      protectNullValues: phase.protectNullValues,
      preserveStringLength: phase.preserveStringLength,
      silentMode: phase.silentMode,
      sqlDialect: phase.sqlDialect,
      apiType: 'proxy',
    },
    'JSON',
  );
  const fixedKind: BodyKind | undefined = phase.dataSetType === undefined ? undefined : base.dataSetType;
  // Query parameter names compare like body field names: case-insensitive, `_` and `-` ignored.
  const queryParams = new Set((phase.queryParams ?? []).map(normalizeName));
  const isQueryParam = (name: string): boolean => queryParams.has(normalizeName(name)) || queryParams.has(normalizeName(phpName(name)));
  const kindOf = (body: Buffer, contentType: string | undefined, routeContentType?: string): BodyKind | undefined =>
    bodyKindOf({ fixed: fixedKind, routeContentType, mediaType: mediaTypeOf(contentType), body });

  // LIST bodies: the route's delimiter, else one the header makes certain (csv-tokenizer.ts).
  const listContext = { listDelimiter: phase.delimiter, listRequireCertainDelimiter: true };
  const jobFor = (dataSetType: DataSetType, requestId: string): JobSpec => ({
    ...base,
    dataSetType,
    context: dataSetType === 'LIST' ? { ...base.context, ...listContext, requestId } : { ...base.context, requestId },
  });

  // Form bodies stay inline: they are small by nature (a browser's fields), and pairs are cheap.
  const protectForm = (body: Buffer, contentType: string | undefined, requestId: string): { body: Buffer; outcome: PhaseOutcome } => {
    // Decoded only when the gateway and every upstream read the same characters (body-charset.ts).
    const { text, encode } = readBodyText(body, 'FORM', contentType);
    checkForm(text);
    const prepared = engine.prepare(jobFor('JSON', requestId));
    const out = protectPairs(text, prepared, () => true, 'form');
    const summary = prepared.finish();
    return { body: encode(out), outcome: outcomeOf('FORM', summary) };
  };
  /** The kind a body is read as; refused (415) when it has none. */
  const kindFor = (body: Buffer, contentType: string | undefined, readAs: BodyKind | undefined): BodyKind => {
    const kind = readAs ?? kindOf(body, contentType);
    if (kind !== undefined) return kind;
    const mediaType = mediaTypeOf(contentType);
    throw new DpgError(
      'UNSUPPORTED_DATA_SET_TYPE',
      `Content-Type ${mediaType === '' ? '(none)' : printableType(mediaType)} has no data set type; set dataSetType on the route`,
    );
  };
  const documentBody = (kind: DataSetType, body: Buffer, contentType: string | undefined, requestId: string): { body: Buffer; outcome: PhaseOutcome } => {
    const out = protectDocumentBody(engine, jobFor(kind, requestId), body, contentType, kind);
    return { body: out.body, outcome: outcomeOf(kind, out.summary) };
  };

  return {
    manifest: base.manifestName,
    jobType: base.jobType,
    reverse: base.jobType === 'Reconstruct' || base.jobType === 'Decrypt',
    protectsQuery: queryParams.size > 0,
    kindOf,

    protectBody(body, contentType, requestId, readAs) {
      if (body.length === 0) return { body, outcome: EMPTY };
      const kind = kindFor(body, contentType, readAs);
      if (kind === 'FORM') return protectForm(body, contentType, requestId);
      return documentBody(kind, body, contentType, requestId);
    },

    async protectBodyAsync(body, contentType, requestId, readAs, options = {}) {
      if (body.length === 0) return { body, outcome: EMPTY };
      const kind = kindFor(body, contentType, readAs);
      if (kind === 'FORM') return protectForm(body, contentType, requestId);
      // A heavy body goes to a worker undecoded (docs/operations.md, Workers): other exchanges go on.
      const task = { kind: 'body', job: jobFor(kind, requestId), bytes: body, contentType, type: kind } as const;
      const running = engine.offload(bytesCost(kind, body.length), task, { transfer: options.consume ? transferOf(body) : [] });
      if (!running) return documentBody(kind, body, contentType, requestId);
      let result: BytesResult;
      try {
        result = (await running) as BytesResult;
      } catch (err) {
        // The exchange tells refused input (never passed through) by its class, which a worker's error lost.
        if (err instanceof DpgError && err.name === 'RefusedInputError') throw new RefusedInputError(err.code as 'MALFORMED_DATA_SET', err.message);
        throw err;
      }
      return { body: asBuffer(result.bytes), outcome: outcomeOf(kind, result.summary) };
    },

    ...(grpc ? { grpc: grpc((requestId) => jobFor('JSON', requestId)) } : {}),

    protectQuery(query, requestId) {
      if (queryParams.size === 0 || query === '') return { query, valuesProtected: 0 };
      if (query.includes(';')) {
        throw new RefusedInputError('MALFORMED_DATA_SET', 'The query string holds a ; (some servers split parameters on it): refused on a route that protects query parameters');
      }
      const prepared = engine.prepare(jobFor('JSON', requestId));
      const out = protectPairs(query, prepared, isQueryParam, 'query');
      return { query: out, valuesProtected: prepared.finish().protected };
    },
  };
}

function outcomeOf(kind: BodyKind, summary: ProtectSummary): PhaseOutcome {
  return { dataSetType: kind, valuesProtected: summary.protected, valuesFailed: summary.failed };
}

/**
 * A form body is a sequence of `name=value` pairs joined by `&`, or it is refused (400): a pair
 * without `=` (a JSON or XML document sent as a form reads as one odd name to the gateway, as a
 * document to an upstream that sniffs), a `;` (older parsers, Python's before 3.9.2 among them,
 * split pairs on it), or a body starting like a JSON or XML document. Empty pairs (`a=1&&b=2`)
 * are skipped by every parser and allowed.
 */
function checkForm(text: string): void {
  const malformed = (why: string): RefusedInputError => new RefusedInputError('MALFORMED_DATA_SET', `The form body ${why}`);
  if (/^\s*[{[<]/.test(text)) throw malformed('looks like a JSON or XML document, not name=value pairs');
  if (text.includes(';')) throw malformed('holds a ; (some servers split pairs on it)');
  const pairs = text.split('&');
  for (let i = 0; i < pairs.length; i++) {
    if (pairs[i] !== '' && !pairs[i].includes('=')) throw malformed(`pair ${i + 1} has no =`);
  }
}

/**
 * Protects `name=value` pairs of a form body or query string with the prepared job's resolver:
 * pairs keep their order; untouched pairs keep their exact bytes; Restrict drops the pair.
 */
function protectPairs(text: string, prepared: PreparedJob, selected: (name: string) => boolean, where: string): string {
  const out: string[] = [];
  const pairs = text.split('&');
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i];
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const name = formDecode(rawName, where, i);
    let action: FieldAction | undefined;
    for (const reading of paramNameReadings(name, where, i)) action = preferOwnRule(action, resolvePairName(reading, prepared, selected));
    if (action === undefined) {
      out.push(pair);
      continue;
    }
    const value = eq === -1 ? '' : formDecode(pair.slice(eq + 1), where, i);
    if (action.removes(value)) continue;
    const result: Scalar = action.apply(value, () => `${where}.${name}`);
    // Detection that found nothing leaves the pair's bytes as they were.
    if (action.byContent === true && result === value) {
      out.push(pair);
      continue;
    }
    out.push(`${rawName}=${formEncode(result === null ? '' : String(result))}`);
  }
  return out.join('&');
}

/**
 * The action for a pair name (one reading of it, param-names.ts). Frameworks read
 * `customer[cardNumber]`, `customer.cardNumber` and `cards[0][number]` as nested fields, so after
 * the full name and PHP's reading of it we try, as JSON would: the innermost
 * named segment (with its `$.` path), then each enclosing segment outwards — a rule on `customer`
 * covers everything beneath it, like a JSON key whose value is an object.
 */
function resolvePairName(name: string, prepared: PreparedJob, selected: (name: string) => boolean): FieldAction | undefined {
  const php = phpName(name);
  const nestings = nestedReadings(name);
  if (!selected(name) && !nestings.some((segments) => segments.some(selected))) return undefined;
  // Detection by content (byContent) stands in only when no segment has a rule of its own.
  const direct = preferOwnRule(prepared.resolver.resolve(name, name), php === name ? undefined : prepared.resolver.resolve(php, php));
  if (direct !== undefined && direct.byContent !== true) return direct;
  for (const segments of nestings) {
    for (let end = segments.length; end > 0; end--) {
      const segment = segments[end - 1];
      if (NUMERIC.test(segment)) continue; // an index names no field
      const action = prepared.resolver.resolve(segment, jsonPath(segments, end));
      if (action !== undefined && action.byContent !== true) return action;
    }
  }
  return direct;
}

/** The first action that is a field's own rule; else detection by content (byContent), if any. */
function preferOwnRule(first: FieldAction | undefined, second: FieldAction | undefined): FieldAction | undefined {
  if (first !== undefined && first.byContent !== true) return first;
  if (second !== undefined && second.byContent !== true) return second;
  return first ?? second;
}

const NUMERIC = /^\d+$/;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** `$.customer.cards[0].number` from the first `end` segments, for manifests with path selectors. */
function jsonPath(segments: readonly string[], end: number): string {
  let path = '$';
  for (let i = 0; i < end; i++) {
    const s = segments[i];
    path += NUMERIC.test(s) ? `[${s}]` : IDENTIFIER.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
  }
  return path;
}

function formDecode(text: string, where: string, index: number): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch (err) {
    throw new DpgError('MALFORMED_DATA_SET', `Invalid percent-encoding in ${where} pair ${index + 1}`, { cause: err });
  }
}

/** application/x-www-form-urlencoded serialisation (WHATWG URL §5.2), as URLSearchParams writes it. */
function formEncode(text: string): string {
  return encodeURIComponent(text)
    .replace(/%20/g, '+')
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
