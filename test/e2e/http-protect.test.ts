// POST /api/protect over real HTTP with the real engine: shapes, encodings, scopes, every catalogue
// error, request ids, and no payload value or secret in logs or error bodies. Plus ops endpoints.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import type { Readable } from 'node:stream';
import type { Engine } from '../../src/engine/types.ts';
import type { JobSpec } from '../../src/core/types.ts';
import { testEngine } from '../helpers/engine.ts';
import { callsiteFrames } from '../../src/transport/http/server.ts';
import { CLIENTS, postJson, startTestGateway, tokenFor, type TestGateway } from './http-helpers.ts';

let gw: TestGateway;
let small: TestGateway;
const tokens: Record<'full' | 'reader' | 'cardOnly' | 'small', string> = { full: '', reader: '', cardOnly: '', small: '' };
const engine = testEngine();

/** Throws a foreign error quoting the payload (as parsers do) for the manifest name 'explode'. */
function trickyEngine(): Engine {
  const real = testEngine();
  return Object.assign(Object.create(real) as Engine, {
    protectDocument(job: JobSpec, dataSet: unknown) {
      if (job.manifestName === 'explode') throw new TypeError(`cannot read ${JSON.stringify(dataSet)}`);
      // A multi-line message whose later lines quote the payload, one of them shaped like a frame.
      if (job.manifestName === 'explode-lines') {
        // The door hands JSON over as the text the client wrote.
        const card = (JSON.parse(dataSet as string) as { cardNumber: string }).cardNumber;
        throw new SyntaxError(`cannot read\nnear ${card}\n    at ${card} (payload:1:1)`);
      }
      return real.protectDocument(job, dataSet);
    },
    protectToCsv(job: JobSpec, input: Readable) {
      return real.protectToCsv(job, input);
    },
  });
}

before(async () => {
  gw = await startTestGateway();
  small = await startTestGateway({ http: { maxBodyBytes: 2048 }, engine: trickyEngine() });
  tokens.full = await tokenFor(gw.base, CLIENTS.full);
  tokens.reader = await tokenFor(gw.base, CLIENTS.reader);
  tokens.cardOnly = await tokenFor(gw.base, CLIENTS.cardOnly);
  tokens.small = await tokenFor(small.base, CLIENTS.full);
});
after(async () => {
  await gw.close();
  await small.close();
});

const CARD = '4111 1111 1111 1111';
const SECRET_VALUES = [CARD, '4111111111111111', 'Jane Doe', 'jane.doe@example.com', '123-45-6789'];

function protect(body: unknown, headers: Record<string, string> = {}, on: TestGateway = gw, token = tokens.full) {
  return postJson(on.base, '/api/protect', body, { 'x-resource-token': token, ...headers });
}

test('Mask a JSON object: documented response shape, request id echoed', async () => {
  const res = await protect(
    { manifestName: 'customer', jobType: 'Mask', dataSet: { name: 'Jane Doe', cardNumber: CARD, note: 'kept' } },
    { 'x-request-id': 'req-123' },
  );
  assert.equal(res.status, 200, res.text);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.equal(res.headers['x-request-id'], 'req-123');
  assert.deepEqual(res.json, {
    dataSet: { name: 'J*** D**', cardNumber: '**** **** **** 1111', note: 'kept' },
    requestId: 'req-123',
    manifestName: 'customer',
    jobType: 'Mask',
    dataSetType: 'JSON',
    summary: { protected: 2, failed: 0, failures: [] },
  });
  const line = gw.logs.find((l) => l.includes('"requestId":"req-123"') && l.includes('"audit":true'));
  assert.ok(line, 'audit line with the request id');
  const audit = JSON.parse(line as string);
  assert.equal(audit.clientId, CLIENTS.full.id);
  assert.equal(audit.manifest, 'customer');
  assert.equal(audit.valuesProtected, 2);
});

test('request id from the body; job type in any case; arrays; __proto__ keys stay data', async () => {
  const res = await protect({
    manifestName: 'customer',
    jobType: 'mask',
    requestId: 'from-body',
    executionContext: 'batch-7',
    apiType: 'rest',
    dataSet: JSON.parse(`[{"cardNumber":"${CARD}","__proto__":{"cardNumber":"${CARD}","polluted":true}}]`),
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.requestId, 'from-body');
  assert.equal(res.json.jobType, 'Mask');
  assert.ok(res.text.includes('"__proto__":{'), 'the __proto__ key is returned as data');
  assert.ok(!res.text.includes(CARD));
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  const audit = gw.logs.find((l) => l.includes('"requestId":"from-body"'));
  assert.ok(audit?.includes('"executionContext":"batch-7"') && audit.includes('"apiType":"rest"'));
});

test('a JSON string dataSet comes back as a string; base64 in gives base64 out', async () => {
  const text = JSON.stringify({ cardNumber: CARD });
  const asString = await protect({ manifestName: 'customer', jobType: 'Mask', dataSet: text });
  assert.equal(asString.status, 200, asString.text);
  assert.deepEqual(JSON.parse(asString.json.dataSet), { cardNumber: '**** **** **** 1111' });

  const b64 = await protect({ manifestName: 'customer', jobType: 'Mask', dataSet: Buffer.from(text).toString('base64') }, { 'x-body-encoding': 'base64' });
  assert.equal(b64.status, 200, b64.text);
  assert.deepEqual(JSON.parse(Buffer.from(b64.json.dataSet, 'base64').toString('utf8')), { cardNumber: '**** **** **** 1111' });
  assert.ok(!b64.text.includes(Buffer.from(text).toString('base64')));
});

test('Pseudonymise → Reconstruct and Encrypt → Decrypt round trips', async () => {
  const original = { name: 'Jane Doe', cardNumber: CARD, email: 'jane.doe@example.com' };
  const pseudo = await protect({ manifestName: 'customer', jobType: 'Pseudonymise', dataSet: original });
  assert.equal(pseudo.status, 200, pseudo.text);
  assert.notEqual(pseudo.json.dataSet.cardNumber, CARD);
  const back = await protect({ manifestName: 'customer', jobType: 'Reconstruct', dataSet: pseudo.json.dataSet });
  assert.deepEqual(back.json.dataSet, original);

  const enc = await protect({ manifestName: 'customer', jobType: 'Encrypt', dataSet: original });
  assert.equal(enc.status, 200, enc.text);
  const dec = await protect({ manifestName: 'customer', jobType: 'Decrypt', dataSet: enc.json.dataSet });
  assert.deepEqual(dec.json.dataSet, original);
});

test('scope matrix: demo-reader masks but may not Reconstruct or Decrypt; manifest allow-list', async () => {
  const ok = await protect({ manifestName: 'customer', jobType: 'Mask', dataSet: { cardNumber: CARD } }, {}, gw, tokens.reader);
  assert.equal(ok.status, 200);
  for (const jobType of ['Reconstruct', 'Decrypt']) {
    const res = await protect({ manifestName: 'customer', jobType, dataSet: { cardNumber: CARD } }, {}, gw, tokens.reader);
    assert.equal(res.status, 403, jobType);
    assert.equal(res.json.code, 'FORBIDDEN');
  }
  const other = await protect({ manifestName: 'customer', jobType: 'Mask', dataSet: {} }, {}, gw, tokens.cardOnly);
  assert.equal(other.status, 403);
  const allowed = await protect({ manifestName: 'card-masking', jobType: 'Mask', dataSet: { cardNumber: CARD } }, {}, gw, tokens.cardOnly);
  assert.equal(allowed.status, 200);
  // The bearer form of the same token is accepted as well.
  const bearer = await postJson(gw.base, '/api/protect', { manifestName: 'card-masking', jobType: 'Mask', dataSet: {} }, { authorization: `Bearer ${tokens.cardOnly}` });
  assert.equal(bearer.status, 200);
});

test('every catalogue error through /api/protect: status, code, problem+json, nothing leaked', async () => {
  const good = { manifestName: 'customer', jobType: 'Mask', dataSet: { cardNumber: CARD } };
  const cases: [string, () => ReturnType<typeof protect>, number, string][] = [
    ['missing manifestName', () => protect({ jobType: 'Mask', dataSet: { cardNumber: CARD } }), 400, 'INVALID_REQUEST'],
    ['bad job type', () => protect({ ...good, jobType: 'Shred' }), 400, 'INVALID_REQUEST'],
    ['bad country code', () => protect({ ...good, countryCode: 'Germany' }), 400, 'INVALID_REQUEST'],
    ['missing dataSet', () => protect({ manifestName: 'customer', jobType: 'Mask' }), 400, 'INVALID_REQUEST'],
    ['number dataSet', () => protect({ ...good, dataSet: 4111111111111111 }), 400, 'INVALID_REQUEST'],
    ['body not JSON', () => protect(`{"dataSet": "${CARD}"`), 400, 'INVALID_REQUEST'],
    ['body an array', () => protect([good]), 400, 'INVALID_REQUEST'],
    ['bad encoding header', () => protect(good, { 'x-body-encoding': 'gzip' }), 400, 'INVALID_REQUEST'],
    ['bad base64', () => protect({ ...good, dataSet: `${CARD}!!` }, { 'x-body-encoding': 'base64' }), 400, 'INVALID_REQUEST'],
    ['bad data set type header', () => protect(good, { 'x-data-set-type': 'YAML' }), 400, 'INVALID_REQUEST'],
    ['wrong content type', () => protect(good, { 'content-type': 'text/plain' }), 400, 'INVALID_REQUEST'],
    ['malformed JSON text dataSet', () => protect({ ...good, dataSet: `{"cardNumber": "${CARD}"` }), 400, 'MALFORMED_DATA_SET'],
    ['no token', () => postJson(gw.base, '/api/protect', good), 401, 'UNAUTHENTICATED'],
    ['reader Decrypt', () => protect({ ...good, jobType: 'Decrypt' }, {}, gw, tokens.reader), 403, 'FORBIDDEN'],
    ['unknown manifest', () => protect({ ...good, manifestName: 'nope' }), 404, 'MANIFEST_NOT_FOUND'],
    ['body over the limit', () => protect({ ...good, padding: 'x'.repeat(4096) }, {}, small, tokens.small), 413, 'PAYLOAD_TOO_LARGE'],
    ['LIST', () => protect(good, { 'x-data-set-type': 'LIST' }), 415, 'UNSUPPORTED_DATA_SET_TYPE'],
    ['job type not in manifest', () => protect({ ...good, manifestName: 'card-masking', jobType: 'Decrypt' }), 422, 'JOB_TYPE_NOT_DEFINED'],
    ['value not protectable (invalid IBAN)', () => protect({ ...good, jobType: 'Pseudonymise', dataSet: { iban: 'DE00 1234 5678', name: 'Jane Doe' } }), 422, 'VALUE_NOT_PROTECTABLE'],
    ['invalid ciphertext', () => protect({ ...good, jobType: 'Decrypt', dataSet: { cardNumber: 'enc:v1:zz:bad' } }), 422, 'VALUE_NOT_PROTECTABLE'],
    ['foreign error in the engine', () => protect({ ...good, manifestName: 'explode' }, {}, small, tokens.small), 500, 'INTERNAL'],
  ];
  for (const [name, run, status, code] of cases) {
    const res = await run();
    assert.equal(res.status, status, `${name}: ${res.text}`);
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, name);
    assert.equal(res.json.code, code, name);
    assert.equal(res.json.status, status, name);
    assert.equal(res.json.type, `urn:dpg:error:${code}`, name);
    assert.equal(typeof res.json.title, 'string', name);
    assert.equal(typeof res.json.detail, 'string', name);
    assert.equal(res.json.requestId, res.headers['x-request-id'], name);
    for (const v of [...SECRET_VALUES, tokens.full, tokens.reader]) assert.ok(!res.text.includes(v), `${name}: leaked`);
  }
  const notProtectable = await protect({ ...good, jobType: 'Pseudonymise', dataSet: { iban: 'DE00 1234 5678' } });
  assert.ok(Array.isArray(notProtectable.json.errors) && notProtectable.json.errors[0].location.length > 0);
  const problems = await protect({ ...good, countryCode: 'Germany', manifestName: 5 });
  assert.deepEqual(problems.json.errors.map((e: { location: string }) => e.location).sort(), ['countryCode', 'manifestName']);
});

test('silent mode: failures counted with their locations, never left in clear', async () => {
  const res = await protect({ manifestName: 'customer', jobType: 'Pseudonymise', silentMode: true, dataSet: { iban: 'DE00 1234 5678', name: 'Jane Doe' } });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.summary.failed, 1);
  assert.equal(res.json.dataSet.iban === 'DE00 1234 5678', false);
});

test('an internal error logs callsite frames only, never lines of a multi-line message', async () => {
  const res = await protect({ manifestName: 'explode-lines', jobType: 'Mask', dataSet: { cardNumber: CARD } }, { 'x-request-id': 'lines-1' }, small, tokens.small);
  assert.equal(res.status, 500, res.text);
  const line = small.logs.find((l) => l.includes('"requestId":"lines-1"') && l.includes('internal error'));
  assert.ok(line !== undefined, 'the internal error was logged');
  const entry = JSON.parse(line) as { errorName: string; frames?: string };
  assert.equal(entry.errorName, 'SyntaxError');
  assert.ok(!line.includes(CARD) && !line.includes('cannot read') && !line.includes('payload:1:1'), 'message lines leaked into the log');
  assert.ok(typeof entry.frames === 'string' && entry.frames.length > 0, 'real frames are kept');
  for (const frame of entry.frames.split('\n')) assert.match(frame, /^\s+at /);
});

test('callsiteFrames: frames after the exact message header, or none at all', () => {
  const err = new Error('first\n    at secret (x:1:1)\nsecond');
  const frames = callsiteFrames(err);
  assert.ok(frames !== undefined && !frames.includes('secret') && frames.split('\n').every((f) => /^\s+at /.test(f)));
  assert.ok(frames.split('\n').length <= 7);
  // A message changed after the throw no longer matches the stack's header: no frames at all.
  const changed = new Error('short');
  void changed.stack;
  changed.message = 'other';
  assert.equal(callsiteFrames(changed), undefined);
  assert.equal(callsiteFrames({ name: 'X', message: 'm', stack: 'X: m\nnot a frame' }), undefined);
  assert.equal(callsiteFrames('a string' as unknown as undefined), undefined);
  assert.equal(callsiteFrames(undefined), undefined);
});

test('no payload value, secret or token in any log line', () => {
  const logs = gw.logs.join('') + small.logs.join('');
  assert.ok(logs.includes('"outcome":"INTERNAL"'), 'the internal error was audited');
  for (const v of [...SECRET_VALUES, tokens.full, tokens.reader, tokens.cardOnly, tokens.small, 'demo-secret', 'reader-secret', 'demo-api-key']) {
    assert.ok(!logs.includes(v), `leaked into logs: ${v.slice(0, 6)}…`);
  }
});

test('XML and SQL documents', async () => {
  const xml = await protect({ manifestName: 'customer', jobType: 'Mask', dataSet: `<c><cardNumber>${CARD}</cardNumber></c>` }, { 'x-data-set-type': 'XML' });
  assert.equal(xml.status, 200, xml.text);
  assert.equal(typeof xml.json.dataSet, 'string');
  assert.ok(xml.json.dataSet.includes('**** **** **** 1111'));
  const xmlB64 = await protect(
    { manifestName: 'customer', jobType: 'Mask', dataSet: Buffer.from(`<c><cardNumber>${CARD}</cardNumber></c>`).toString('base64') },
    { 'x-data-set-type': 'xml', 'x-body-encoding': 'base64' },
  );
  assert.ok(Buffer.from(xmlB64.json.dataSet, 'base64').toString().includes('**** **** **** 1111'));
  const broken = await protect({ manifestName: 'customer', jobType: 'Mask', dataSet: `<c><cardNumber>${CARD}` }, { 'x-data-set-type': 'XML' });
  assert.equal(broken.status, 400);
  assert.equal(broken.json.code, 'MALFORMED_DATA_SET');
  assert.ok(!broken.text.includes(CARD));
  const sql = await protect(
    { manifestName: 'customer', jobType: 'Mask', dataSet: `INSERT INTO t (name, cardNumber) VALUES ('Jane Doe', '${CARD}')` },
    { 'x-data-set-type': 'SQL', 'x-sql-dialect': 'mysql' },
  );
  assert.equal(sql.status, 200, sql.text);
  assert.ok(sql.json.dataSet.includes('**** **** **** 1111'));
  const notText = await protect({ manifestName: 'customer', jobType: 'Mask', dataSet: { a: 1 } }, { 'x-data-set-type': 'XML' });
  assert.equal(notText.status, 400);
});

test('unknown route 404 and wrong method 405 are problem+json', async () => {
  const missing = await request(`${gw.base}/api/nothing`);
  assert.equal(missing.statusCode, 404);
  assert.match(String(missing.headers['content-type']), /problem\+json/);
  assert.equal(((await missing.body.json()) as { code: string }).code, 'ROUTE_NOT_FOUND');
  const wrong = await request(`${gw.base}/api/protect`, { method: 'GET' });
  assert.equal(wrong.statusCode, 405);
  assert.equal(wrong.headers.allow, 'POST');
  assert.equal(((await wrong.body.json()) as { code: string }).code, 'METHOD_NOT_ALLOWED');
});

test('operations endpoints: healthz, readyz, metrics, proxy CA', async () => {
  const health = await request(`${gw.base}/healthz`);
  assert.equal(health.statusCode, 200);
  assert.deepEqual(await health.body.json(), { status: 'ok' });
  gw.ready = false;
  const starting = await request(`${gw.base}/readyz`);
  assert.equal(starting.statusCode, 503);
  await starting.body.dump();
  gw.ready = true;
  const ready = await request(`${gw.base}/readyz`);
  assert.equal(ready.statusCode, 200);
  await ready.body.dump();

  const metrics = await request(`${gw.base}/metrics`);
  assert.equal(metrics.statusCode, 200);
  assert.match(String(metrics.headers['content-type']), /^text\/plain/);
  const text = await metrics.body.text();
  assert.match(text, /dpg_requests_total\{door="http",job_type="Mask",outcome="ok"\} \d+/);
  assert.match(text, /dpg_errors_total\{door="http",code="FORBIDDEN"\} \d+/);
  assert.ok(!text.includes('4111'));

  const noCa = await request(`${gw.base}/proxy/ca.pem`);
  assert.equal(noCa.statusCode, 404);
  await noCa.body.dump();
  gw.caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const ca = await request(`${gw.base}/proxy/ca.pem`);
  assert.equal(ca.statusCode, 200);
  assert.equal(await ca.body.text(), gw.caPem);
});

test('graceful close: in-flight requests finish, then the listener is gone', async () => {
  const own = await startTestGateway();
  const token = await tokenFor(own.base, CLIENTS.full);
  // Upload the body slowly so the request is in flight when close() starts.
  const { PassThrough } = await import('node:stream');
  const body = new PassThrough();
  const pending = request(`${own.base}/api/protect`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-resource-token': token },
    body,
  });
  body.write('{"manifestName":"customer","jobType":"Mask",');
  await new Promise((r) => setTimeout(r, 100));
  const closing = own.close();
  await new Promise((r) => setTimeout(r, 100));
  body.end(`"dataSet":{"cardNumber":"${CARD}"}}`);
  const res = await pending;
  assert.equal(res.statusCode, 200);
  assert.equal(((await res.body.json()) as { dataSet: { cardNumber: string } }).dataSet.cardNumber, '**** **** **** 1111');
  await closing;
  await assert.rejects(request(`${own.base}/healthz`));
});
