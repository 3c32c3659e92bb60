// Reversibility through the doors of a real `dpg serve` (issue 17): generated texts of every
// detected kind among random neighbours are pseudonymised and encrypted through HTTP /api/protect,
// gRPC ProtectValues (FILE cells) and the egress proxy's reverse listener, then reconstructed and
// decrypted: every text must come back exactly. The in-process run over many more texts is
// test/engine/detection-round-trip.test.ts; this one checks the doors add nothing of their own.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { request } from 'undici';
import { postJson, tokenFor } from './http-helpers.ts';
import { startRecordingUpstream, startServe, type RecordingUpstream, type ServeProcess } from './serve-process.ts';
import { createClient, protectValues, toRows } from '../transport/grpc/client.ts';
import { textArb } from '../helpers/detected-values.ts';

const TEXTS = fc.sample(textArb, { numRuns: 60, seed: 1717 });

let serve: ServeProcess;
let upstream: RecordingUpstream;
let token: string;

before(async () => {
  upstream = await startRecordingUpstream();
  serve = await startServe('dpg-detect-round-trip-', {
    routes: [
      `    - name: pseudonymise\n      match: { host: 127.0.0.1, port: ${upstream.port}, path: "/p/**" }\n      request: { manifest: customer, jobType: Pseudonymise }`,
      `    - name: encrypt\n      match: { host: 127.0.0.1, port: ${upstream.port}, path: "/e/**" }\n      request: { manifest: customer, jobType: Encrypt }`,
    ].join('\n'),
    reverse: `    - listen: 127.0.0.1:0\n      upstream: http://127.0.0.1:${upstream.port}`,
  });
  token = await tokenFor(serve.base, { id: 'demo-client', secret: 'demo-secret' });
});

after(async () => {
  await serve?.stop();
  await upstream?.close();
});

async function api(jobType: string, dataSet: unknown): Promise<unknown> {
  const res = await postJson(serve.base, '/api/protect', { manifestName: 'customer', jobType, dataSet }, { 'x-resource-token': token });
  assert.equal(res.status, 200, res.text);
  return res.json.dataSet;
}

describe('round trips through every door (dpg serve, customer manifest)', () => {
  it('HTTP /api/protect: Pseudonymise/Reconstruct and Encrypt/Decrypt give every text back', async () => {
    const doc = { notes: TEXTS };
    const p = (await api('Pseudonymise', doc)) as { notes: string[] };
    assert.ok(p.notes.filter((t, i) => t !== TEXTS[i]).length > 40, 'most texts hold a value and change');
    assert.deepEqual(await api('Reconstruct', p), doc);
    assert.deepEqual(await api('Decrypt', await api('Encrypt', doc)), doc);
  });

  it('gRPC ProtectValues (FILE cells): Pseudonymise then Reconstruct, Encrypt then Decrypt', async () => {
    const client = createClient(serve.ports.grpc);
    try {
      const run = async (job: string, rows: string[][]) =>
        (await protectValues(client, { job_config: { configuration_name: 'customer', job_type: job, dataset_type: 'FILE' }, labels: ['notes'], rows: toRows(rows) }, token)).rows;
      const rows = TEXTS.map((t) => [t]);
      assert.deepEqual(await run('Reconstruct', await run('Pseudonymise', rows)), rows);
      assert.deepEqual(await run('Decrypt', await run('Encrypt', rows)), rows);
    } finally {
      client.close();
    }
  });

  it('egress proxy (reverse listener): bodies reach the upstream protected and reverse exactly', async () => {
    for (const [path, reverse] of [['/p/notes', 'Reconstruct'], ['/e/notes', 'Decrypt']] as const) {
      upstream.received.length = 0;
      const body = JSON.stringify({ notes: TEXTS });
      const res = await request(`http://127.0.0.1:${serve.ports['proxy-reverse']}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      assert.equal(res.statusCode, 200, await res.body.text());
      assert.equal(upstream.received.length, 1);
      const sent = JSON.parse(upstream.received[0].body) as { notes: string[] };
      assert.ok(sent.notes.filter((t, i) => t !== TEXTS[i]).length > 40, `${path}: protected on the way`);
      assert.deepEqual(await api(reverse, sent), { notes: TEXTS });
    }
  });
});
