// One phase of a route (request or response), compiled once: the validated job, and how a body of
// a given media type and the selected query parameters are protected with it.

import { DpgError } from '../core/errors.ts';
import type { DataSetType, JobSpec, ProtectSummary, Scalar } from '../core/types.ts';
import type { RoutePhase } from '../config/types.ts';
import type { Engine, PreparedJob } from '../engine/types.ts';
import type { FieldAction } from '../formats/codec.ts';
import { parseJobRequest } from '../engine/request.ts';

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
  /** Protects a decoded body of the given Content-Type. Empty bodies come back as they are. */
  protectBody(body: Buffer, contentType: string | undefined, requestId: string): { body: Buffer; outcome: PhaseOutcome };
  /** Protects the selected parameters of a raw query string (without `?`); others stay byte for byte. */
  protectQuery(query: string, requestId: string): { query: string; valuesProtected: number };
}

type BodyKind = DataSetType | 'FORM';

/** Media type → data set type (DESIGN §9): JSON, XML, CSV as LIST, and HTML forms as named fields. */
export function inferBodyKind(mediaType: string): BodyKind | undefined {
  if (mediaType === 'application/json' || mediaType.endsWith('+json')) return 'JSON';
  if (mediaType === 'application/xml' || mediaType === 'text/xml' || mediaType.endsWith('+xml')) return 'XML';
  if (mediaType === 'text/csv') return 'LIST';
  if (mediaType === 'application/x-www-form-urlencoded') return 'FORM';
  if (mediaType === 'application/sql') return 'SQL';
  return undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Validates the phase's job fields once (parseJobRequest, the same rules as every door) and
 * returns the per-request protection functions. Throws DpgError INVALID_REQUEST on bad config.
 */
export function compilePhase(phase: RoutePhase, engine: Engine): CompiledPhase {
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
  const queryParams = new Set(phase.queryParams ?? []);

  const jobFor = (dataSetType: DataSetType, requestId: string): JobSpec => ({
    ...base,
    dataSetType,
    context: { ...base.context, requestId },
  });

  return {
    manifest: base.manifestName,
    jobType: base.jobType,
    reverse: base.jobType === 'Reconstruct' || base.jobType === 'Decrypt',
    protectsQuery: queryParams.size > 0,

    protectBody(body, contentType, requestId) {
      if (body.length === 0) return { body, outcome: { dataSetType: undefined, valuesProtected: 0, valuesFailed: 0 } };
      const { mediaType, charset } = parseContentType(contentType);
      const kind = fixedKind ?? inferBodyKind(mediaType);
      if (kind === undefined) {
        throw new DpgError(
          'UNSUPPORTED_DATA_SET_TYPE',
          `Content-Type ${mediaType === '' ? '(none)' : mediaType.slice(0, 80)} has no data set type; set dataSetType on the route`,
        );
      }
      if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
        throw new DpgError('UNSUPPORTED_DATA_SET_TYPE', `Charset ${charset.slice(0, 40)} is not supported (UTF-8 only)`);
      }
      let text: string;
      try {
        text = utf8.decode(body);
      } catch (err) {
        throw new DpgError('MALFORMED_DATA_SET', 'The body is not valid UTF-8', { cause: err });
      }
      if (kind === 'FORM') {
        const prepared = engine.prepare(jobFor('JSON', requestId));
        const out = protectPairs(text, prepared, () => true, 'form');
        const summary = prepared.finish();
        return { body: Buffer.from(out, 'utf8'), outcome: outcomeOf('FORM', summary) };
      }
      const result = engine.protectDocument(jobFor(kind, requestId), text);
      const data = result.dataSet;
      const outText = typeof data === 'string' ? data : JSON.stringify(data);
      return { body: Buffer.from(outText, 'utf8'), outcome: outcomeOf(kind, result.summary) };
    },

    protectQuery(query, requestId) {
      if (queryParams.size === 0 || query === '') return { query, valuesProtected: 0 };
      const prepared = engine.prepare(jobFor('JSON', requestId));
      const out = protectPairs(query, prepared, (name) => queryParams.has(name), 'query');
      return { query: out, valuesProtected: prepared.finish().protected };
    },
  };
}

function outcomeOf(kind: BodyKind, summary: ProtectSummary): PhaseOutcome {
  return { dataSetType: kind, valuesProtected: summary.protected, valuesFailed: summary.failed };
}

export function parseContentType(header: string | undefined): { mediaType: string; charset: string | undefined } {
  if (!header) return { mediaType: '', charset: undefined };
  const parts = header.split(';');
  let charset: string | undefined;
  for (let i = 1; i < parts.length; i++) {
    const [k, v] = parts[i].split('=');
    if (k.trim().toLowerCase() === 'charset' && v !== undefined) charset = v.trim().replace(/^"|"$/g, '').toLowerCase();
  }
  return { mediaType: parts[0].trim().toLowerCase(), charset };
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
    const action = resolvePairName(name, prepared, selected);
    if (action === undefined) {
      out.push(pair);
      continue;
    }
    const value = eq === -1 ? '' : formDecode(pair.slice(eq + 1), where, i);
    if (action.removes(value)) continue;
    const result: Scalar = action.apply(value, () => `${where}.${name}`);
    out.push(`${rawName}=${formEncode(result === null ? '' : String(result))}`);
  }
  return out.join('&');
}

/**
 * The action for a pair name. Frameworks read `customer[cardNumber]`, `customer.cardNumber` and
 * `cards[0][number]` as nested fields, so after the full name we try, as JSON would: the innermost
 * named segment (with its `$.` path), then each enclosing segment outwards — a rule on `customer`
 * covers everything beneath it, like a JSON key whose value is an object.
 */
function resolvePairName(name: string, prepared: PreparedJob, selected: (name: string) => boolean): FieldAction | undefined {
  const segments = name.includes('[') || name.includes('.') ? name.split(/[[\].]/).filter((s) => s !== '') : undefined;
  if (segments === undefined || (segments.length === 1 && segments[0] === name)) {
    return selected(name) ? prepared.resolver.resolve(name, name) : undefined;
  }
  if (!selected(name) && !segments.some(selected)) return undefined;
  // Detection by content (byContent) stands in only when no segment has a rule of its own.
  const direct = prepared.resolver.resolve(name, name);
  if (direct !== undefined && direct.byContent !== true) return direct;
  for (let end = segments.length; end > 0; end--) {
    const segment = segments[end - 1];
    if (NUMERIC.test(segment)) continue; // an index names no field
    const action = prepared.resolver.resolve(segment, jsonPath(segments, end));
    if (action !== undefined && action.byContent !== true) return action;
  }
  return direct;
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
