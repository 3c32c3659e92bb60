// A reader that stops reading the gateway's stdout (a stalled log pipeline, a container runtime
// under pressure) must not stall the gateway: lines wait in logging.bufferBytes, the rest are
// dropped whole and counted, a warning gives the count once the reader is back, and the process
// still exits 0 on SIGTERM while its stdout is not read.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startServe, type ServeProcess } from './serve-process.ts';
import { postJson, tokenFor } from './http-helpers.ts';

const REQUESTS = 2000;
const CONCURRENCY = 8;

describe('logging does not stall the gateway', () => {
  let serve: ServeProcess;
  let token: string;
  before(async () => {
    serve = await startServe('dpg-log-', undefined, (yaml) => yaml.replace('logging:\n  level: info', 'logging:\n  level: info\n  bufferBytes: 65536'));
    token = await tokenFor(serve.base, { id: 'demo-client', secret: 'demo-secret' });
  });
  after(async () => {
    if (serve.child.exitCode === null) await serve.stop();
  });

  const dropped = async (): Promise<number> => {
    const res = await request(`${serve.base}/metrics`);
    const line = (await res.body.text()).split('\n').find((l) => l.startsWith('dpg_log_lines_dropped_total '));
    assert.ok(line, 'the metric is exposed');
    return Number(line.split(' ')[1]);
  };

  const protect = () =>
    postJson(serve.base, '/api/protect', { manifestName: 'customer', jobType: 'Mask', dataSet: { cardNumber: '4111 1111 1111 1111' } }, { 'x-resource-token': token });

  it('serves every request while stdout is not read, drops whole lines and says how many', { timeout: 180_000 }, async () => {
    assert.equal(await dropped(), 0);
    serve.child.stdout!.pause();
    let next = 0;
    const statuses = new Map<number, number>();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < REQUESTS) {
          next++;
          // A busy machine may make the overload guard shed (503 with Retry-After): that is an answer,
          // and the request is sent again; what must not happen is a request left waiting on the log.
          let res = await protect();
          for (let tries = 0; res.status === 503 && tries < 50; tries++) res = await protect();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        }
      }),
    );
    assert.deepEqual([...statuses], [[200, REQUESTS]]);
    const droppedWhilePaused = await dropped();
    assert.ok(droppedWhilePaused > 0, 'the audit lines did not fit the 64 KiB buffer and the pipe');

    const seen = serve.logs.length;
    serve.child.stdout!.resume();
    const warned = await new Promise<number>((resolve) => {
      const look = setInterval(() => {
        const warnings = serve.logs.slice(seen).map((l) => JSON.parse(l) as { msg?: string; droppedLines?: number }).filter((e) => e.msg?.startsWith('logging: lines dropped'));
        if (warnings.length > 0) {
          clearInterval(look);
          resolve(warnings.reduce((n, e) => n + (e.droppedLines ?? 0), 0));
        }
      }, 50);
    });
    assert.equal(warned, droppedWhilePaused, 'the warning counts exactly the lines the metric counts');
    // Whole lines only: everything that arrived is JSON, one record per line.
    for (const line of serve.logs) assert.doesNotThrow(() => JSON.parse(line));
    const audits = serve.logs.filter((l) => l.includes('"audit":true') && l.includes('"door":"http"')).length;
    assert.ok(audits + droppedWhilePaused >= REQUESTS, `${audits} audit lines + ${droppedWhilePaused} dropped cover ${REQUESTS} requests`);
  });

  it('exits 0 on SIGTERM while its stdout is not read', { timeout: 180_000 }, async () => {
    serve.child.stdout!.pause();
    for (let i = 0; i < 1500; i++) await protect();
    const exited = new Promise<number | null>((resolve) => serve.child.once('exit', (code) => resolve(code)));
    serve.child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
