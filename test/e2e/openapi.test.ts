// openapi/openapi.json against the gateway itself: the document is valid OpenAPI 3.1 (a maintained
// validator), /openapi.json serves it, and real requests to a running HTTP door — every success
// and every documented error — get answers whose status, content type, headers and body the
// document describes (bodies checked with ajv against the document's own schemas). The test also
// checks it reached every response the document lists, so the document cannot list one that
// never happens, nor the gateway answer one the document does not list.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Validator } from '@seriousme/openapi-schema-validator';
import { request } from 'undici';
import { DpgError, errorCatalogue } from '../../src/core/errors.ts';
import { DEFAULT_OVERLOAD, Overload } from '../../src/core/overload.ts';
import type { JobSpec } from '../../src/core/types.ts';
import type { Engine } from '../../src/engine/types.ts';
import { testEngine } from '../helpers/engine.ts';
import { CLIENTS, multipart, startTestGateway, tokenFor, type TestGateway } from './http-helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const DOC_FILE = join(ROOT, 'openapi', 'openapi.json');
const doc = JSON.parse(readFileSync(DOC_FILE, 'utf8')) as Record<string, any>;

const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true, allowUnionTypes: true });
for (const k of ['openapi', 'info', 'servers', 'tags', 'security', 'paths', 'components', 'jsonSchemaDialect']) ajv.addKeyword(k);
ajv.addSchema({ ...doc, $id: 'dpg-openapi' });

const pointer = (...parts: string[]): string => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** Follows a `$ref` to components/responses; returns the response object and its pointer. */
function resolveResponse(at: string, response: Record<string, any>): { at: string; response: Record<string, any> } {
  if (typeof response.$ref !== 'string') return { at, response };
  const name = response.$ref.replace('#/components/responses/', '');
  return { at: pointer('components', 'responses', name), response: doc.components.responses[name] };
}

function resolveHeader(header: Record<string, any>): Record<string, any> {
  return typeof header.$ref === 'string' ? doc.components.headers[header.$ref.replace('#/components/headers/', '')] : header;
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

const reached = new Set<string>();
const codesSeen = new Set<string>();

/**
 * Checks one real answer against the document: `where` is a path+method of the document, or a
 * component response (route errors). Returns the parsed body.
 */
function conforms(where: { path: string; method: string } | { component: string }, answer: Answer, label: string): any {
  let at: string;
  let response: Record<string, any>;
  if ('component' in where) {
    at = pointer('components', 'responses', where.component);
    response = doc.components.responses[where.component];
    reached.add(`component ${where.component}`);
  } else {
    const responses = doc.paths[where.path]?.[where.method]?.responses;
    assert.ok(responses, `${label}: ${where.method.toUpperCase()} ${where.path} is not in the document`);
    const listed = responses[String(answer.status)];
    assert.ok(listed, `${label}: ${answer.status} is not a documented answer of ${where.method.toUpperCase()} ${where.path}: ${answer.text.slice(0, 200)}`);
    ({ at, response } = resolveResponse(pointer('paths', where.path, where.method, 'responses', String(answer.status)), listed));
    reached.add(`${where.method} ${where.path} ${answer.status}`);
  }
  for (const [name, raw] of Object.entries(response.headers ?? {})) {
    const header = resolveHeader(raw as Record<string, any>);
    const value = answer.headers[name.toLowerCase()];
    if (header.required) assert.ok(value !== undefined, `${label}: header ${name} is missing`);
    if (value !== undefined) {
      const validate = ajv.compile(header.schema);
      assert.ok(validate(value), `${label}: header ${name}: ${ajv.errorsText(validate.errors)}`);
    }
  }
  const type = String(answer.headers['content-type'] ?? '').split(';')[0].trim();
  assert.ok(response.content?.[type], `${label}: content type ${type} is not documented for ${at}`);
  const body = type.endsWith('json') ? JSON.parse(answer.text) : answer.text;
  const validate = ajv.getSchema(`dpg-openapi#/${pointer(...at.split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~')), 'content', type, 'schema')}`)
    ?? ajv.compile({ $ref: `dpg-openapi#/${at}/${pointer('content', type, 'schema')}` });
  assert.ok(validate(body), `${label}: body does not match ${at}: ${ajv.errorsText(validate.errors)} — ${answer.text.slice(0, 300)}`);
  if (type === 'application/problem+json') codesSeen.add(body.code);
  return body;
}

async function send(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<Answer> {
  const res = await request(`${base}${path}`, { method: method as 'GET', headers, body });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

const CARD = '4111 1111 1111 1111';
/** The real engine, plus the failures no request can provoke on purpose, chosen by executionContext. */
function failingEngine(): Engine {
  const real = testEngine();
  const failure = (job: JobSpec): Error | undefined => {
    const c = job.context.executionContext;
    if (c === 'fail-internal') return new TypeError('a bug');
    if (c === 'fail-key-retired') return new DpgError('KEY_RETIRED', 'The active key version is retired');
    if (c === 'fail-worker') return new DpgError('WORKER_FAILED', 'The protection worker failed');
    return undefined;
  };
  return Object.assign(Object.create(real) as Engine, {
    // Light bodies are protected inline (protectDocument), heavy ones in a worker (offload).
    protectDocument(job: JobSpec, dataSet: unknown) {
      const err = failure(job);
      if (err) throw err;
      return real.protectDocument(job, dataSet);
    },
    async protectDocumentAsync(job: JobSpec, dataSet: unknown) {
      const err = failure(job);
      if (err) throw err;
      return real.protectDocumentAsync(job, dataSet);
    },
    protectToCsv(job: JobSpec, input: Readable) {
      const err = failure(job);
      if (err) {
        input.resume();
        const output = new PassThrough();
        const summary = Promise.reject(err);
        summary.catch(() => undefined);
        output.destroy(err);
        return { output, summary };
      }
      return real.protectToCsv(job, input);
    },
  });
}

let gw: TestGateway;
let full = '';
let reader = '';
before(async () => {
  gw = await startTestGateway({ engine: failingEngine(), http: { maxBodyBytes: 4096, maxFileBytes: 4096 }, identity: { apiKeys: [] }, secretChecks: { maxInFlight: 1, maxQueued: 1 } });
  full = await tokenFor(gw.base, CLIENTS.full);
  reader = await tokenFor(gw.base, CLIENTS.reader);
});
after(async () => {
  await gw.close();
});

test('/openapi.json serves the document', async () => {
  const answer = await send(gw.base, 'GET', '/openapi.json');
  assert.deepEqual(conforms({ path: '/openapi.json', method: 'get' }, answer, 'openapi'), doc);
});

test('the problem model lists every code of the error catalogue', () => {
  assert.deepEqual([...doc.components.schemas.ErrorCode.enum].sort(), Object.keys(errorCatalogue).sort());
});

test('token endpoint and JWKS: every documented answer', async () => {
  const TOKEN = '/gateway/identity/v1/token';
  const form = (f: Record<string, string>) => new URLSearchParams(f).toString();
  // No API keys configured here (each is one more scrypt run per request): the 401 comes from a wrong secret.
  const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };
  const good = { grant_type: 'client_credentials', client_id: CLIENTS.full.id, client_secret: CLIENTS.full.secret };
  const where = { path: TOKEN, method: 'post' };
  conforms(where, await send(gw.base, 'POST', TOKEN, formHeaders, form(good)), 'token');
  conforms(where, await send(gw.base, 'POST', TOKEN, formHeaders, form({ ...good, grant_type: 'password' })), 'grant type');
  conforms(where, await send(gw.base, 'POST', TOKEN, { 'content-type': 'application/json' }, '{}'), 'not a form');
  conforms(where, await send(gw.base, 'POST', TOKEN, formHeaders, form({ ...good, client_secret: 'wrong' })), 'wrong secret');
  conforms(where, await send(gw.base, 'POST', TOKEN, formHeaders, form({ ...good, pad: 'x'.repeat(17 * 1024) })), 'too large');
  const burst = await Promise.all(Array.from({ length: 8 }, () => send(gw.base, 'POST', TOKEN, formHeaders, form(good))));
  assert.ok(burst.some((a) => a.status === 503), `statuses: ${burst.map((a) => a.status).join(',')}`);
  for (const a of burst) conforms(where, a, 'burst');
  conforms({ path: '/gateway/identity/v1/jwks', method: 'get' }, await send(gw.base, 'GET', '/gateway/identity/v1/jwks'), 'jwks');
});

test('operations endpoints and route errors', async () => {
  conforms({ path: '/healthz', method: 'get' }, await send(gw.base, 'GET', '/healthz'), 'healthz');
  conforms({ path: '/readyz', method: 'get' }, await send(gw.base, 'GET', '/readyz'), 'ready');
  gw.ready = false;
  conforms({ path: '/readyz', method: 'get' }, await send(gw.base, 'GET', '/readyz'), 'not ready');
  gw.ready = true;
  conforms({ path: '/metrics', method: 'get' }, await send(gw.base, 'GET', '/metrics'), 'metrics');
  conforms({ path: '/proxy/ca.pem', method: 'get' }, await send(gw.base, 'GET', '/proxy/ca.pem'), 'no CA');
  gw.caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  conforms({ path: '/proxy/ca.pem', method: 'get' }, await send(gw.base, 'GET', '/proxy/ca.pem'), 'CA');
  gw.caPem = undefined;
  conforms({ component: 'RouteNotFound' }, await send(gw.base, 'GET', '/nope'), 'no route');
  const wrong = await send(gw.base, 'DELETE', '/api/protect');
  conforms({ component: 'MethodNotAllowed' }, wrong, 'wrong method');
  assert.equal(wrong.headers.allow, 'POST');
});

test('/api/protect: JSON, XML, SQL and base64 successes and every documented error', async () => {
  const where = { path: '/api/protect', method: 'post' };
  const good = { manifestName: 'customer', jobType: 'Mask', dataSet: { name: 'Jane Doe', cardNumber: CARD } };
  const protect = (body: unknown, headers: Record<string, string> = {}, token: string | null = full) =>
    send(gw.base, 'POST', '/api/protect', { 'content-type': 'application/json', ...(token === null ? {} : { 'x-resource-token': token }), ...headers }, typeof body === 'string' ? body : JSON.stringify(body));
  const ok: [string, Promise<Answer>][] = [
    ['JSON', protect(good)],
    ['JSON text', protect({ ...good, dataSet: JSON.stringify(good.dataSet) })],
    ['XML', protect({ ...good, dataSet: `<c><cardNumber>${CARD}</cardNumber></c>` }, { 'x-data-set-type': 'XML' })],
    ['SQL', protect({ ...good, dataSet: "INSERT INTO c (cardNumber) VALUES ('4111 1111 1111 1111')" }, { 'x-data-set-type': 'SQL' })],
    ['base64', protect({ ...good, dataSet: Buffer.from('<c><ssn>123-45-6789</ssn></c>').toString('base64') }, { 'x-data-set-type': 'XML', 'x-body-encoding': 'base64' })],
    ['bearer', protect(good, { authorization: `Bearer ${full}` }, null)],
  ];
  for (const [label, p] of ok) {
    const body = conforms(where, await p, label);
    assert.equal(body.summary.failed, 0, label);
  }
  const errors: [string, Promise<Answer>, string][] = [
    ['missing field', protect({ jobType: 'Mask', dataSet: {} }), 'INVALID_REQUEST'],
    ['malformed', protect({ ...good, dataSet: '{"a": ' }), 'MALFORMED_DATA_SET'],
    ['no token', protect(good, {}, null), 'UNAUTHENTICATED'],
    ['bad token', protect(good, {}, 'not-a-token'), 'UNAUTHENTICATED'],
    ['scope', protect({ ...good, jobType: 'Decrypt' }, {}, reader), 'FORBIDDEN'],
    ['manifest', protect({ ...good, manifestName: 'nope' }), 'MANIFEST_NOT_FOUND'],
    ['too large', protect({ ...good, pad: 'x'.repeat(5000) }), 'PAYLOAD_TOO_LARGE'],
    ['LIST', protect(good, { 'x-data-set-type': 'LIST' }), 'UNSUPPORTED_DATA_SET_TYPE'],
    ['job type', protect({ ...good, manifestName: 'card-masking', jobType: 'Decrypt' }), 'JOB_TYPE_NOT_DEFINED'],
    ['value', protect({ ...good, jobType: 'Pseudonymise', dataSet: { iban: 'DE00 1234 5678' } }), 'VALUE_NOT_PROTECTABLE'],
    ['internal', protect({ ...good, executionContext: 'fail-internal' }), 'INTERNAL'],
    ['retired', protect({ ...good, executionContext: 'fail-key-retired' }), 'KEY_RETIRED'],
    ['worker', protect({ ...good, executionContext: 'fail-worker' }), 'WORKER_FAILED'],
  ];
  for (const [label, p, code] of errors) {
    const answer = await p;
    const body = conforms(where, answer, label);
    assert.equal(body.code, code, label);
    assert.ok(!answer.text.includes(CARD) && !answer.text.includes(full), `${label}: leaked`);
  }
});

test('/file/protect: CSV successes and every documented error', async () => {
  const where = { path: '/file/protect', method: 'post' };
  const CSV = `name,cardNumber\nJane Doe,${CARD}\n`;
  const upload = (meta: Record<string, unknown>, file: string | null = CSV, headers: Record<string, string> = {}, token: string | null = full) => {
    const parts: { name: string; filename?: string; contentType?: string; body: string }[] = [{ name: 'protectFileDataset', contentType: 'application/json', body: JSON.stringify(meta) }];
    if (file !== null) parts.push({ name: 'file', filename: 'customers.csv', contentType: 'text/csv', body: file });
    const { body, contentType } = multipart(parts);
    return send(gw.base, 'POST', '/file/protect', { 'content-type': contentType, ...(token === null ? {} : { 'x-resource-token': token }), ...headers }, body);
  };
  const meta = { manifestName: 'customer', jobType: 'Mask' };
  const csv = await upload(meta);
  assert.ok(!String(conforms(where, csv, 'csv')).includes(CARD));
  conforms(where, await upload({ ...meta, dataSet: [{ name: 'Jane Doe' }] }, null, { 'x-data-set-type': 'JSON' }), 'json metadata');
  const errors: [string, Promise<Answer>, string][] = [
    ['no metadata', send(gw.base, 'POST', '/file/protect', { 'content-type': 'text/plain', 'x-resource-token': full }, 'x'), 'INVALID_REQUEST'],
    ['malformed', upload({ ...meta, dataSet: '[{"a": ' }, null, { 'x-data-set-type': 'JSON' }), 'MALFORMED_DATA_SET'],
    ['no token', upload(meta, CSV, {}, null), 'UNAUTHENTICATED'],
    ['scope', upload({ ...meta, jobType: 'Decrypt' }, CSV, {}, reader), 'FORBIDDEN'],
    ['manifest', upload({ ...meta, manifestName: 'nope' }), 'MANIFEST_NOT_FOUND'],
    ['too large', upload(meta, `name\n${'x'.repeat(5000)}\n`), 'PAYLOAD_TOO_LARGE'],
    ['job type', upload({ manifestName: 'card-masking', jobType: 'Decrypt' }), 'JOB_TYPE_NOT_DEFINED'],
    ['value', upload({ ...meta, jobType: 'Pseudonymise' }, 'iban\nDE00 1234 5678\n'), 'VALUE_NOT_PROTECTABLE'],
    ['internal', upload({ ...meta, executionContext: 'fail-internal' }), 'INTERNAL'],
    ['retired', upload({ ...meta, executionContext: 'fail-key-retired' }), 'KEY_RETIRED'],
    ['worker', upload({ ...meta, executionContext: 'fail-worker' }), 'WORKER_FAILED'],
  ];
  for (const [label, p, code] of errors) {
    const answer = await p;
    assert.equal(conforms(where, answer, label).code, code, label);
  }
});

test('over an overload bound: 503 OVERLOADED with Retry-After on the token endpoint, /api/protect and /file/protect', async () => {
  // One request in flight is the bound; a request whose body never comes holds it.
  const overload = new Overload({ ...DEFAULT_OVERLOAD, maxRequestsInFlight: 1, maxEventLoopDelayMs: 0, maxEventLoopLagMs: 0, maxEventLoopUtilization: 1 });
  const busy = await startTestGateway({ overload });
  // A token first (nothing is in flight yet): unauthenticated, the held request would be answered at once.
  const token = await tokenFor(busy.base, CLIENTS.full);
  const held = connect(Number(new URL(busy.base).port), '127.0.0.1');
  try {
    await once(held, 'connect');
    held.write(`POST /api/protect HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Resource-Token: ${token}\r\nContent-Length: 100\r\n\r\n`);
    for (let i = 0; i < 2000 && overload.gate('http').requests === 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(overload.gate('http').requests, 1, 'the held request is in flight');
    const answers: [string, Promise<Answer>][] = [
      ['/gateway/identity/v1/token', send(busy.base, 'POST', '/gateway/identity/v1/token', { 'content-type': 'application/x-www-form-urlencoded' }, 'grant_type=client_credentials')],
      ['/api/protect', send(busy.base, 'POST', '/api/protect', { 'content-type': 'application/json' }, JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: { cardNumber: CARD } }))],
      ['/file/protect', send(busy.base, 'POST', '/file/protect', { 'content-type': 'multipart/form-data; boundary=x' }, '--x--\r\n')],
    ];
    for (const [path, pending] of answers) {
      const answer = await pending;
      const body = conforms({ path, method: 'post' }, answer, `overloaded ${path}`);
      assert.equal(body.code, 'OVERLOADED', path);
      assert.equal(answer.headers['retry-after'], '1', path);
      assert.ok(!answer.text.includes(CARD), path);
    }
  } finally {
    held.destroy();
    await busy.close();
    overload.close();
  }
});

test('every documented answer was reached, and every code the HTTP API can give was seen', () => {
  const documented = new Set<string>([...Object.keys(doc.components.responses).filter((n) => n === 'RouteNotFound' || n === 'MethodNotAllowed').map((n) => `component ${n}`)]);
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(item)) for (const status of Object.keys(op.responses)) documented.add(`${method} ${path} ${status}`);
  }
  assert.deepEqual([...documented].filter((d) => !reached.has(d)), []);
  const proxyOnly = ['UPSTREAM_UNREACHABLE', 'UPSTREAM_TIMEOUT'];
  assert.deepEqual(Object.keys(errorCatalogue).filter((c) => !proxyOnly.includes(c) && !codesSeen.has(c)), []);
});

// Last: compiling the OpenAPI 3.1 meta-schema holds the event loop for a while, long enough for an
// idle keep-alive connection of the requests above to be closed under a request sent after it.
test('the document is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)', async () => {
  const result = await new Validator().validate(structuredClone(doc));
  assert.deepEqual(result, { valid: true });
});

