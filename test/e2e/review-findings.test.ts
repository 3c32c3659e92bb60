// The review's findings 2, 3, 6/11, 7, 9 and 12b through the doors of a real `dpg serve` process with
// the default manifest: HTTP /api/protect, gRPC ProtectValues, and the egress proxy (reverse listener
// and forward proxy) in front of a loopback upstream that records what it receives. Each case is the
// review's reproduction; the checks are what reaches the client, the upstream and the log.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyAgent, request } from 'undici';
import { postJson, tokenFor } from './http-helpers.ts';
import { startRecordingUpstream, startServe, type ReceivedRequest, type RecordingUpstream, type ServeProcess } from './serve-process.ts';
import { createClient, protectValues, toRows, type CallFailure } from '../transport/grpc/client.ts';

/** Values that must never reach a log line (checked after every test). */
const NEVER_LOGGED = ['4111111111111111', '4111 1111 1111 1111', 'jane.doe@example.com', '123-45-6789', '415-555-0132'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let serve: ServeProcess;
let upstream: RecordingUpstream;
let upstreamPort: number;
let received: ReceivedRequest[];
let token: string;

before(async () => {
  upstream = await startRecordingUpstream();
  upstreamPort = upstream.port;
  received = upstream.received;
  const route = (name: string, path: string, jobType: string, extra = '') =>
    `    - name: ${name}\n      match: { host: 127.0.0.1, port: ${upstreamPort}, path: "${path}" }\n      request: { manifest: customer, jobType: ${jobType}${extra} }`;
  serve = await startServe('dpg-review-', {
    routes: [route('anon', '/v1/anon/**', 'Anonymise', ', queryParams: [salary]'), route('mask', '/**', 'Mask')].join('\n'),
    reverse: `    - listen: 127.0.0.1:0\n      upstream: http://127.0.0.1:${upstreamPort}`,
  });
  token = await tokenFor(serve.base, { id: 'demo-client', secret: 'demo-secret' });
});

after(async () => {
  for (const secret of NEVER_LOGGED) assert.ok(!serve.logs.some((line) => line.includes(secret)), `${secret} never logged`);
  await serve?.stop();
  await upstream?.close();
});

const api = (body: unknown, headers: Record<string, string> = {}) => postJson(serve.base, '/api/protect', body, { 'x-resource-token': token, ...headers });

/** Through the reverse listener to the recording upstream: [status, what the upstream got or undefined]. */
async function viaProxy(path: string, contentType: string, body: string, headers: Record<string, string> = {}): Promise<[number, string | undefined, string]> {
  received.length = 0;
  const res = await request(`http://127.0.0.1:${serve.ports['proxy-reverse']}${path}`, { method: 'POST', headers: { 'content-type': contentType, ...headers }, body });
  const text = await res.body.text();
  return [res.statusCode, received[0]?.body, text];
}

/** Log lines after index `from` that pass `keep`, once there are `count` of them (or after 10 s: a watchdog, it returns as soon as they are there). */
async function linesFrom(from: number, keep: (line: string) => boolean, count: number): Promise<string[]> {
  const end = Date.now() + 10_000;
  for (;;) {
    const lines = serve.logs.slice(from).filter(keep);
    if (lines.length >= count || Date.now() > end) return lines;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function grpcCall(request: Parameters<typeof protectValues>[1], extra: Record<string, string> = {}) {
  const client = createClient(serve.ports.grpc);
  return protectValues(client, request, token, extra).finally(() => client.close());
}

describe('finding 2: personal data as member names', () => {
  const REVIEW = '{"byEmail":{"jane.doe@example.com":{"name":"Jane Doe"}},"cards":{"4111111111111111":"primary"}}';

  it('HTTP: refused with locations that withhold the names; silent mode removes the members', async () => {
    const res = await api(`{"manifestName":"customer","jobType":"Anonymise","dataSet":${REVIEW}}`);
    assert.equal(res.status, 422, res.text);
    assert.equal(res.json.code, 'VALUE_NOT_PROTECTABLE');
    assert.deepEqual(res.json.errors.map((e: { location: string }) => e.location), ['$.byEmail[?] (detected email)', '$.cards[?] (detected card)']);
    assert.ok(!res.text.includes('jane.doe@example.com') && !res.text.includes('4111111111111111'));
    const silent = await api(`{"manifestName":"customer","jobType":"Anonymise","silentMode":true,"dataSet":${REVIEW}}`);
    assert.equal(silent.status, 200, silent.text);
    assert.deepEqual(silent.json.dataSet, { byEmail: {}, cards: {} });
    assert.equal(silent.json.summary.failed, 2);
  });

  it('proxy: the request is refused and nothing reaches the upstream', async () => {
    const [status, got, text] = await viaProxy('/v1/customers', 'application/json', REVIEW);
    assert.equal(status, 422, text);
    assert.equal(got, undefined);
    assert.ok(!text.includes('jane.doe@example.com'));
  });

  it('gRPC: a JSON cell with a personal key, and a personal label', async () => {
    await assert.rejects(
      grpcCall({ job_config: { configuration_name: 'customer', job_type: 'Mask', dataset_type: 'JSON' }, labels: ['doc'], rows: toRows([[REVIEW]]) }),
      (err: CallFailure) => err.code === 9 && !err.details.includes('jane.doe@example.com') && !JSON.stringify(err.trailers).includes('4111111111111111'),
    );
    const silent = await grpcCall({ job_config: { configuration_name: 'customer', job_type: 'Mask', dataset_type: 'FILE', silent_mode: true }, labels: ['id', '4111111111111111'], rows: toRows([['1', 'primary']]) });
    assert.deepEqual(silent.rows, [['1', '']]);
  });
});

describe('finding 3: names that fold onto a field name', () => {
  it('HTTP: the review example is anonymised', async () => {
    const res = await api('{"manifestName":"customer","jobType":"Anonymise","dataSet":{"dateOfBırth":"1985-04-12","ſalary":52000}}');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.dataSet, { dateOfBırth: '1985', ſalary: '50000-59999' });
  });

  it('proxy: form fields and selected query parameters fold the same way', async () => {
    const form = new URLSearchParams({ 'dateOfBırth': '1985-04-12', 'ſalary': '52000', 'ｓｓｎ': '123-45-6789' }).toString();
    const [status, got] = await viaProxy('/v1/anon/form?%C5%BFalary=52000', 'application/x-www-form-urlencoded', form);
    assert.equal(status, 200);
    const fields = new URLSearchParams(got!);
    assert.equal(fields.get('dateOfBırth'), '1985');
    assert.equal(fields.get('ſalary'), '50000-59999');
    assert.equal(fields.get('ｓｓｎ'), 'REDACTED');
    assert.equal(new URLSearchParams(received[0].path.split('?')[1]).get('ſalary'), '50000-59999');
  });
});

describe('findings 6 and 11: long and hostile digit runs', () => {
  const NOTES = '1 '.repeat(61) + '4111 1111 1111 1111';

  it('HTTP, gRPC and proxy: the card after 61 one-digit groups is masked', async () => {
    const res = await api({ manifestName: 'customer', jobType: 'Mask', dataSet: { notes: NOTES } });
    assert.equal(res.json.dataSet.notes, '1 '.repeat(61) + '**** **** **** 1111');
    const rows = await grpcCall({ job_config: { configuration_name: 'customer', job_type: 'Mask', dataset_type: 'FILE' }, labels: ['notes'], rows: toRows([[NOTES]]) });
    assert.equal(rows.rows[0][0], '1 '.repeat(61) + '**** **** **** 1111');
    const [, got] = await viaProxy('/v1/notes', 'application/json', JSON.stringify({ notes: NOTES }));
    assert.ok(!got!.includes('4111 1111 1111 1111'), got);
  });

  it('HTTP: 4 MB of hostile digit groups are protected, the card at the end masked', async () => {
    // Linearity is counted in test/detect/digit-runs.test.ts and timed in bench/detect.bench.ts
    // (4.5 s before the fix); a clock here failed on a loaded machine, so this asserts the outcome.
    const notes = '4 '.repeat(2_000_000 - 10) + '4111 1111 1111 1111';
    const res = await api({ manifestName: 'customer', jobType: 'Mask', dataSet: { notes } });
    assert.equal(res.status, 200);
    assert.equal(res.json.dataSet.notes.length, notes.length);
    assert.ok(res.json.dataSet.notes.endsWith('**** **** **** 1111'));
  });
});

describe('finding 7: XML text split by comments, PIs and CDATA', () => {
  const DOC = '<c><notes>call 415-555-0132<!---->9 or jane.doe@example.com<!---->x 4111111111111111<!---->1</notes></c>';
  const MASKED = '<c><notes>call ***-***-0132<!---->9 or j***@example.comx<!----> ************1111<!---->1</notes></c>';

  it('HTTP: each piece protected, comments kept in place', async () => {
    const res = await api({ manifestName: 'customer', jobType: 'Mask', dataSet: DOC }, { 'x-data-set-type': 'XML' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.dataSet, MASKED);
  });

  it('proxy: the upstream receives the same document structure', async () => {
    const [status, got] = await viaProxy('/v1/notes', 'application/xml', DOC);
    assert.equal(status, 200);
    assert.equal(got, MASKED);
  });
});

describe('finding 9: client request ids that hold personal data', () => {
  it('HTTP: header and body ids are replaced, never echoed', async () => {
    const res = await api({ manifestName: 'customer', jobType: 'Mask', dataSet: { a: 1 } }, { 'x-request-id': '4111111111111111' });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['x-request-id']), UUID);
    assert.match(res.json.requestId, UUID);
    const body = await api({ manifestName: 'customer', jobType: 'Mask', requestId: '123-45-6789', dataSet: { a: 1 } });
    assert.match(body.json.requestId, UUID);
    const bad = await api({ manifestName: 'nope', jobType: 'Mask', dataSet: {} }, { 'x-request-id': '415-555-0132' });
    assert.ok(!bad.text.includes('415-555-0132'));
    const plain = await api({ manifestName: 'customer', jobType: 'Mask', dataSet: { a: 1 } }, { 'x-request-id': 'job-42' });
    assert.equal(plain.headers['x-request-id'], 'job-42');
  });

  it('gRPC: request_id and x-request-id metadata', async () => {
    const call = { job_config: { configuration_name: 'customer', job_type: 'Mask', dataset_type: 'FILE' }, labels: ['a'], rows: toRows([['x']]) };
    const res = await grpcCall({ ...call, request_id: '4111111111111111' }, { 'x-request-id': '123-45-6789' });
    assert.match(res.trailers['x-request-id'], UUID);
  });

  it('proxy (reverse and forward, the review reproduction): the audit line gets a fresh id', async () => {
    const logged = serve.logs.length;
    const [status] = await viaProxy('/v1/customers', 'application/json', '{"cardNumber":"4111111111111111"}', { 'x-request-id': '4111111111111111' });
    assert.equal(status, 200);
    const agent = new ProxyAgent(`http://127.0.0.1:${serve.ports.proxy}`);
    try {
      const res = await request(`http://127.0.0.1:${upstreamPort}/v1/customers`, {
        dispatcher: agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': '4111111111111111' },
        body: '{"cardNumber":"4111111111111111"}',
      });
      await res.body.text();
      assert.equal(res.statusCode, 200);
    } finally {
      await agent.close();
    }
    // The audit line is written when the exchange ends, just after the response: wait for both.
    const audits = await linesFrom(logged, (line) => line.includes('"requestId"'), 2);
    assert.ok(audits.length >= 2, 'one audit line per request');
    for (const line of audits) assert.match(JSON.parse(line).requestId, UUID);
  });
});

describe('finding 12b: writings the detectors missed', () => {
  it('HTTP: typographic separators, a no-break-spaced IBAN, a negative card number, a card after a dash, a JSON document in a string', async () => {
    const dataSet = {
      a: 'card 4111\u202F1111\u202F1111\u202F1111',
      b: 'card 4111\u20091111\u20091111\u20091111',
      c: 'card 4111\u20131111\u20131111\u20131111',
      d: 'IBAN DE89\u00A03704\u00A00044\u00A00532\u00A00130\u00A000',
      e: 'ref 12-4111111111111111',
      payload: JSON.stringify({ name: 'Jane Doe', dateOfBirth: '1985-04-12', notes: 'mail jane.doe@example.com' }),
    };
    const text = `{"manifestName":"customer","jobType":"Anonymise","dataSet":{"cc":-4111111111111111,${JSON.stringify(dataSet).slice(1)}}`;
    const res = await api(text);
    assert.equal(res.status, 200, res.text);
    for (const secret of ['4111', '3704', 'Jane Doe', '1985-04-12', 'jane.doe@example.com']) assert.ok(!res.text.includes(secret), `${secret} in ${res.text}`);
    const inner = JSON.parse(res.json.dataSet.payload);
    assert.equal(inner.name, 'REDACTED');
    assert.equal(inner.dateOfBirth, '1985');
  });

  it('proxy: the upstream gets the document in the string protected, the string still a string', async () => {
    const [status, got] = await viaProxy('/v1/notes', 'application/json', '{"payload":"{\\"name\\":\\"Jane Doe\\",\\"cardNumber\\":\\"4111 1111 1111 1111\\"}"}');
    assert.equal(status, 200);
    assert.equal(got, '{"payload":"{\\"name\\":\\"J*** D**\\",\\"cardNumber\\":\\"**** **** **** 1111\\"}"}');
  });
});
