// The request metrics are counted in plain numbers and rendered when scraped (src/core/metrics.ts):
// the text must be what prom-client's own Counter and Histogram give for the same requests.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { Metrics, type RequestObservation } from '../../src/core/metrics.ts';

const OBSERVATIONS: RequestObservation[] = [
  { door: 'http', jobType: 'Mask', outcome: 'ok', seconds: 0.0004, valuesProtected: 28 },
  { door: 'http', jobType: 'Mask', outcome: 'ok', seconds: 0.0005, valuesProtected: 0 },
  { door: 'http', jobType: 'Mask', outcome: 'ok', seconds: 0.003, valuesProtected: 2 },
  { door: 'http', jobType: 'none', outcome: 'UNAUTHENTICATED', seconds: 0.00001, valuesProtected: 0 },
  { door: 'http', jobType: 'Mask', outcome: 'FORBIDDEN', seconds: 0.02, valuesProtected: 0 },
  { door: 'http', jobType: 'Pseudonymise', outcome: 'FORBIDDEN', seconds: 12, valuesProtected: 0 },
  { door: 'grpc', jobType: 'Mask', outcome: 'ok', seconds: 0.7, valuesProtected: 5 },
  { door: 'file', jobType: 'Encrypt', outcome: 'ok', seconds: 2.5, valuesProtected: 1000 },
];

/** What prom-client's own metrics give for the same requests (the way metrics.ts counted before). */
async function reference(observations: readonly RequestObservation[]): Promise<string> {
  const registers = [new Registry()];
  const requests = new Counter({ name: 'dpg_requests_total', help: 'Protection requests by door, job type and outcome', labelNames: ['door', 'job_type', 'outcome'], registers });
  const values = new Counter({ name: 'dpg_values_protected_total', help: 'Values changed or removed by a technique', labelNames: ['door', 'job_type'], registers });
  const errors = new Counter({ name: 'dpg_errors_total', help: 'Failed requests by error code', labelNames: ['door', 'code'], registers });
  const latency = new Histogram({
    name: 'dpg_request_duration_seconds',
    help: 'Time to serve a protection request',
    labelNames: ['door'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers,
  });
  for (const o of observations) {
    requests.inc({ door: o.door, job_type: o.jobType, outcome: o.outcome });
    if (o.valuesProtected > 0) values.inc({ door: o.door, job_type: o.jobType }, o.valuesProtected);
    if (o.outcome !== 'ok') errors.inc({ door: o.door, code: o.outcome });
    latency.observe({ door: o.door }, o.seconds);
  }
  return registers[0]!.metrics();
}

/** The text block of one metric family. */
function family(text: string, name: string): string {
  return text
    .split('\n\n')
    .find((block) => block.startsWith(`# HELP ${name} `))!
    .trim();
}

test('request counters and the duration histogram render as prom-client renders them', async () => {
  const metrics = new Metrics({ collectDefaults: false });
  for (const o of OBSERVATIONS) metrics.observeRequest(o);
  const ours = (await metrics.render()).body;
  const theirs = await reference(OBSERVATIONS);
  for (const name of ['dpg_requests_total', 'dpg_values_protected_total', 'dpg_errors_total', 'dpg_request_duration_seconds']) {
    assert.equal(family(ours, name), family(theirs, name), name);
  }
  assert.match(ours, /^dpg_request_duration_seconds_bucket\{le="0.0005",door="http"\} 3$/m);
  assert.match(ours, /^dpg_errors_total\{door="http",code="FORBIDDEN"\} 2$/m);
  // Counted once per scrape, not added up again.
  assert.equal(family((await metrics.render()).body, 'dpg_requests_total'), family(theirs, 'dpg_requests_total'));
  const json = await metrics.registry.getMetricsAsJSON();
  assert.ok(json.some((m) => m.name === 'dpg_request_duration_seconds' && String(m.type) === 'histogram'));
});

test('before any request the families are there, with no series', async () => {
  const ours = (await new Metrics({ collectDefaults: false }).render()).body;
  const theirs = await reference([]);
  for (const name of ['dpg_requests_total', 'dpg_errors_total', 'dpg_request_duration_seconds']) assert.equal(family(ours, name), family(theirs, name));
});
