// POST /file/protect over real HTTP: multipart metadata and data, streamed CSV out, base64, every
// reachable catalogue error, aborts after streaming started, and 200,000 rows streamed (output before the upload ends).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough, Readable } from 'node:stream';
import { request } from 'undici';
import type { Engine } from '../../src/engine/types.ts';
import type { JobSpec, ProtectSummary } from '../../src/core/types.ts';
import { DpgError } from '../../src/core/errors.ts';
import { CLIENTS, multipart, startTestGateway, tokenFor, type TestGateway } from './http-helpers.ts';
import { testEngine } from '../helpers/engine.ts';

const CARD = '4111 1111 1111 1111';
const CSV = `name,cardNumber,city\nJane Doe,${CARD},Paris\nJohn Roe,5500 0000 0000 0004,Oslo\n`;
const META = { manifestName: 'customer', jobType: 'Mask' };

/** Adds two failure modes to the real engine: a foreign error, and an error after 200 KB of output. */
function trickyEngine(): Engine {
  const real = testEngine();
  return Object.assign(Object.create(real) as Engine, {
    protectToCsv(job: JobSpec, input: Readable) {
      if (job.manifestName === 'explode') throw new RangeError(`bad input ${CARD}`);
      if (job.manifestName === 'explode-late') {
        input.resume();
        const output = new PassThrough();
        const summary = new Promise<ProtectSummary>((_resolve, reject) => {
          output.write(Buffer.alloc(200 * 1024, 'a'));
          setTimeout(() => {
            const err = new DpgError('VALUE_NOT_PROTECTABLE', '1 value(s) could not be processed');
            output.destroy(err);
            reject(err);
          }, 50);
        });
        summary.catch(() => undefined);
        return { output, summary };
      }
      return real.protectToCsv(job, input);
    },
  });
}

let gw: TestGateway;
let open: TestGateway;
let token = '';
let readerToken = '';
before(async () => {
  gw = await startTestGateway({ engine: trickyEngine() });
  open = await startTestGateway({ engine: testEngine(), http: { requireTokenForFileProtect: false, maxFileBytes: 4096, maxBodyBytes: 2048 } });
  token = await tokenFor(gw.base, CLIENTS.full);
  readerToken = await tokenFor(gw.base, CLIENTS.reader);
});
after(async () => {
  await gw.close();
  await open.close();
});

type Part = Parameters<typeof multipart>[0][number];

async function upload(parts: Part[], headers: Record<string, string> = {}, on: TestGateway = gw, withToken = true) {
  const form = multipart(parts);
  const res = await request(`${on.base}/file/protect`, {
    method: 'POST',
    headers: { 'content-type': form.contentType, ...(withToken ? { 'x-resource-token': token } : {}), ...headers },
    body: form.body,
  });
  const text = await res.body.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

const metaPart = (meta: object = META, name = 'protectFileDataset'): Part => ({ name, contentType: 'application/json', body: JSON.stringify(meta) });
const filePart = (body: string | Buffer = CSV, filename = 'people.csv'): Part => ({ name: 'file', filename, contentType: 'text/csv', body });

test('LIST file part: streamed CSV download, same columns, values masked', async () => {
  const res = await upload([metaPart(), filePart()], { 'x-request-id': 'file-1' });
  assert.equal(res.status, 200, res.text);
  assert.match(String(res.headers['content-type']), /^text\/csv/);
  assert.equal(res.headers['content-disposition'], 'attachment; filename="people-protected.csv"');
  assert.equal(res.headers['x-request-id'], 'file-1');
  assert.equal(res.text, 'name,cardNumber,city\nJ*** D**,**** **** **** 1111,Paris\nJ*** R**,**** **** **** 0004,Oslo\n');
  const audit = gw.logs.find((l) => l.includes('"requestId":"file-1"') && l.includes('"audit":true'));
  assert.ok(audit?.includes('"door":"file"') && audit.includes('"valuesProtected":4'));
});

test('metadata as a file part, or found by content type under another name', async () => {
  const asFile = await upload([{ name: 'protectFileDataset', filename: 'meta.json', contentType: 'application/json', body: JSON.stringify(META) }, filePart()]);
  assert.equal(asFile.status, 200, asFile.text);
  assert.ok(asFile.text.includes('**** **** **** 1111'));
  const byType = await upload([metaPart(META, 'config'), filePart()]);
  assert.equal(byType.status, 200, byType.text);
  assert.ok(byType.text.includes('**** **** **** 1111'));
});

test('data in the metadata: LIST text, and a JSON array flattened to columns', async () => {
  const list = await upload([metaPart({ ...META, dataSet: CSV })]);
  assert.equal(list.status, 200, list.text);
  assert.equal(list.headers['content-disposition'], 'attachment; filename="customer-protected.csv"');
  assert.ok(list.text.startsWith('name,cardNumber,city\nJ*** D**,**** **** **** 1111,Paris'));

  const json = await upload([metaPart({ ...META, dataSet: [{ name: 'Jane Doe', address: { city: 'Paris' }, cardNumber: CARD }] })], { 'x-data-set-type': 'JSON' });
  assert.equal(json.status, 200, json.text);
  const [header, row] = json.text.trim().split(/\r?\n/);
  assert.deepEqual(header.split(','), ['name', 'address.city', 'cardNumber']);
  assert.deepEqual(row.split(','), ['J*** D**', 'Paris', '**** **** **** 1111']);
});

test('base64 data: file part with line breaks, and metadata dataSet', async () => {
  const encoded = Buffer.from(CSV).toString('base64').replace(/(.{20})/g, '$1\r\n');
  const file = await upload([metaPart(), filePart(encoded, 'people.b64')], { 'x-body-encoding': 'base64' });
  assert.equal(file.status, 200, file.text);
  assert.equal(file.text, 'name,cardNumber,city\nJ*** D**,**** **** **** 1111,Paris\nJ*** R**,**** **** **** 0004,Oslo\n');
  const inline = await upload([metaPart({ ...META, dataSet: Buffer.from(CSV).toString('base64') })], { 'x-body-encoding': 'base64' });
  assert.equal(inline.status, 200, inline.text);
  assert.equal(inline.text, file.text);
  const bad = await upload([metaPart(), filePart('not*base64!', 'x.b64')], { 'x-body-encoding': 'base64' });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.code, 'INVALID_REQUEST');
});

test('token optional by config; when given it is still checked', async () => {
  const anonymous = await upload([metaPart(), filePart()], {}, open, false);
  assert.equal(anonymous.status, 200, anonymous.text);
  const forged = await upload([metaPart(), filePart()], { 'x-resource-token': 'a.b.c' }, open, false);
  assert.equal(forged.status, 401);
});

test('without a token only protect-scope jobs run: Reconstruct and Decrypt need a verified token', async () => {
  for (const jobType of ['Reconstruct', 'Decrypt']) {
    const res = await upload([metaPart({ ...META, jobType }), filePart()], {}, open, false);
    assert.equal(res.status, 401, `${jobType}: ${res.text}`);
    assert.equal(res.json.code, 'UNAUTHENTICATED');
    assert.match(res.json.detail, new RegExp(`^${jobType} needs a token`));
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="dpg"');
  }
  for (const jobType of ['Pseudonymise', 'Encrypt']) {
    const res = await upload([metaPart({ ...META, jobType }), filePart()], {}, open, false);
    assert.equal(res.status, 200, `${jobType}: ${res.text}`);
  }
  // No token, no client: the pseudonym scope of a client configured without one (no partner's ids).
  for (const scope of [{ thirdPartyId: 7 }, { dataUsageId: 2 }, { isDataConsistentAcrossOrganization: true }]) {
    const res = await upload([metaPart({ ...META, jobType: 'Pseudonymise', ...scope }), filePart()], {}, open, false);
    assert.equal(res.status, 403, `${JSON.stringify(scope)}: ${res.text}`);
  }
  // A token sent anyway is verified and its scopes enforced, even where none is required.
  const openReader = await tokenFor(open.base, CLIENTS.reader);
  const reader = await upload([metaPart({ ...META, jobType: 'Reconstruct' }), filePart()], { 'x-resource-token': openReader }, open, false);
  assert.equal(reader.status, 403, reader.text);
  const blank = await upload([metaPart({ ...META, jobType: 'Decrypt' }), filePart()], { 'x-resource-token': ' ' }, open, false);
  assert.equal(blank.status, 401, blank.text);
  const openFull = await tokenFor(open.base, CLIENTS.full);
  const full = await upload([metaPart({ ...META, jobType: 'Reconstruct' }), filePart()], { 'x-resource-token': openFull }, open, false);
  assert.ok(full.status !== 401 && full.status !== 403, full.text);
});

test('every reachable catalogue error through /file/protect', async () => {
  const cases: [string, () => ReturnType<typeof upload>, number, string][] = [
    ['missing metadata', () => upload([filePart()]), 400, 'INVALID_REQUEST'],
    ['metadata without data', () => upload([metaPart()]), 400, 'INVALID_REQUEST'],
    ['file before metadata', () => upload([filePart(), metaPart()]), 400, 'INVALID_REQUEST'],
    ['two metadata parts', () => upload([metaPart(), metaPart(), filePart()]), 400, 'INVALID_REQUEST'],
    ['metadata not JSON', () => upload([{ name: 'protectFileDataset', body: `{"dataSet":"${CARD}"` }, filePart()]), 400, 'INVALID_REQUEST'],
    ['data twice', () => upload([metaPart({ ...META, dataSet: CSV }), filePart()]), 400, 'INVALID_REQUEST'],
    ['bad job type', () => upload([metaPart({ ...META, jobType: 'Shred' }), filePart()]), 400, 'INVALID_REQUEST'],
    ['not multipart', () => request(`${gw.base}/file/protect`, { method: 'POST', headers: { 'x-resource-token': token, 'content-type': 'text/csv' }, body: CSV }).then(async (r) => ({ status: r.statusCode, headers: r.headers, text: '', json: await r.body.json() as any })), 400, 'INVALID_REQUEST'],
    ['malformed JSON data', () => upload([metaPart({ ...META, dataSet: `[{"cardNumber":"${CARD}"` })], { 'x-data-set-type': 'JSON' }), 400, 'MALFORMED_DATA_SET'],
    ['no token', () => upload([metaPart(), filePart()], {}, gw, false), 401, 'UNAUTHENTICATED'],
    ['reader Decrypt', () => upload([metaPart({ ...META, jobType: 'Decrypt' }), filePart()], { 'x-resource-token': readerToken }), 403, 'FORBIDDEN'],
    ['unknown manifest', () => upload([metaPart({ ...META, manifestName: 'nope' }), filePart()]), 404, 'MANIFEST_NOT_FOUND'],
    ['file over the cap (declared length)', () => upload([metaPart(), filePart('x'.repeat(80_000))], {}, open, false), 413, 'PAYLOAD_TOO_LARGE'],
    ['metadata over the body limit', () => upload([metaPart({ ...META, pad: 'x'.repeat(3000) }), filePart()], {}, open, false), 413, 'PAYLOAD_TOO_LARGE'],
    ['bad data set type', () => upload([metaPart(), filePart()], { 'x-data-set-type': 'PDF' }), 400, 'INVALID_REQUEST'],
    ['job type not in manifest', () => upload([metaPart({ manifestName: 'card-masking', jobType: 'Decrypt' }), filePart()]), 422, 'JOB_TYPE_NOT_DEFINED'],
    ['value not protectable (invalid IBAN)', () => upload([metaPart({ ...META, jobType: 'Pseudonymise' }), filePart('iban\nDE00 1234 5678\n')]), 422, 'VALUE_NOT_PROTECTABLE'],
    ['foreign error', () => upload([metaPart({ ...META, manifestName: 'explode' }), filePart()]), 500, 'INTERNAL'],
  ];
  for (const [name, run, status, code] of cases) {
    const res = await run();
    assert.equal(res.status, status, `${name}: ${res.text}`);
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, name);
    assert.equal(res.json.code, code, name);
    assert.ok(!res.text.includes(CARD) && !res.text.includes('Jane Doe') && !res.text.includes(token), `${name}: leaked`);
  }
});

test('an error after streaming started cuts the connection instead of ending the file', async () => {
  const form = multipart([metaPart({ ...META, manifestName: 'explode-late' }), filePart()]);
  const res = await request(`${gw.base}/file/protect`, {
    method: 'POST',
    headers: { 'content-type': form.contentType, 'x-resource-token': token },
    body: form.body,
  });
  assert.equal(res.statusCode, 200);
  await assert.rejects(res.body.arrayBuffer());
});

test('a chunked upload over the cap never completes as a 200', async () => {
  const form = multipart([metaPart(), filePart(`cardNumber\n${`${CARD}\n`.repeat(1000)}`)]);
  const res = await request(`${open.base}/file/protect`, {
    method: 'POST',
    headers: { 'content-type': form.contentType },
    body: Readable.from([form.body]), // no Content-Length: the cap is enforced while streaming
  }).catch((err: unknown) => err as Error);
  if (res instanceof Error) return; // connection cut: fine
  if (res.statusCode === 200) {
    await assert.rejects(res.body.arrayBuffer());
  } else {
    assert.equal(res.statusCode, 413);
    await res.body.dump();
  }
});

test('no payload value, secret or token in any log line', () => {
  const logs = gw.logs.join('') + open.logs.join('');
  assert.ok(logs.includes('"outcome":"INTERNAL"'));
  for (const v of [CARD, 'Jane Doe', '5500 0000 0000 0004', token, readerToken, 'demo-secret', 'demo-api-key']) {
    assert.ok(!logs.includes(v), `leaked into logs: ${v.slice(0, 6)}…`);
  }
});

test('200,000 CSV rows stream through: output starts before the upload ends; every row masked', async (t) => {
  const ROWS = 200_000;
  const BATCH = 1000;
  const BATCHES = ROWS / BATCH;
  // Wide rows (about 250 bytes, 50 MB in all) so that holding the data would dwarf the fixed costs.
  const NOTES = 'Free text that is not protected by the manifest and passes through unchanged. '.repeat(2);
  const boundary = '----dpgbig';
  // Streaming is shown by counting, not by memory: a gateway that held the upload (or the answer)
  // could not send its first masked row before the client had sent its last batch.
  let batchesSent = 0;
  let batchesSentAtFirstRow = -1;
  async function* body(): AsyncGenerator<Buffer> {
    yield Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="protectFileDataset"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(META)}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n` +
        'id,name,cardNumber,email,city,street,notes\n',
    );
    for (let start = 0; start < ROWS; start += BATCH) {
      let chunk = '';
      for (let i = start; i < start + BATCH; i++) {
        const card = `4111 1111 ${String(1000 + (i % 9000))} ${String(i % 10000).padStart(4, '0')}`;
        chunk += `${i},Person Number${i},${card},person${i}@example.com,City ${i % 97},${i} Long Street Name Avenue,${NOTES}\n`;
      }
      yield Buffer.from(chunk);
      batchesSent++;
    }
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }

  global.gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  try {
    const res = await request(`${gw.base}/file/protect`, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-resource-token': token },
      body: Readable.from(body()),
    });
    assert.equal(res.statusCode, 200);
    let rows = -1;
    let clear = 0;
    let carry = '';
    for await (const chunk of res.body) {
      const text = carry + chunk.toString('utf8');
      const lines = text.split('\n');
      carry = lines.pop() as string;
      for (const line of lines) {
        rows++;
        if (rows === 1) batchesSentAtFirstRow = batchesSent;
        if (rows > 0 && !/,\*\*\*\* \*\*\*\* \*\*\*\* \d{4},/.test(line)) clear++;
      }
    }
    assert.equal(carry, '');
    assert.equal(rows, ROWS);
    assert.equal(clear, 0, 'every card number masked');
  } finally {
    clearInterval(sampler);
  }
  const growthMb = (peak - baseline) / 1024 / 1024;
  t.diagnostic(`first masked row arrived after ${batchesSentAtFirstRow} of ${BATCHES} batches were sent; RSS growth ${growthMb.toFixed(1)} MB`);
  assert.ok(batchesSentAtFirstRow >= 0 && batchesSentAtFirstRow < BATCHES / 2, `first row after ${batchesSentAtFirstRow} of ${BATCHES} batches`);
  // A loose guard only (GC timing moves RSS by tens of MB on a busy machine): about 50 MB passes
  // each way, so holding both would be well above it.
  assert.ok(growthMb < 120, `RSS grew by ${growthMb.toFixed(1)} MB`);
});
