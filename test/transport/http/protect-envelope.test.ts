// The /api/protect envelope reads a JSON object or array dataSet from its text without JSON.parse
// building it (protect-envelope.ts, writtenDataSet); every other body takes the full path. These
// cases pin that both give the same answers, the same errors, and find them in the same order:
// a job error before a dataSet given twice, bad syntax anywhere before the job, numbers as written.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError } from '../../../src/core/errors.ts';
import { openEnvelope, type EnvelopeHeaders } from '../../../src/transport/http/protect-envelope.ts';
import { testEngine } from '../../helpers/engine.ts';

const engine = testEngine();
const headers = (over: Partial<EnvelopeHeaders> = {}): EnvelopeHeaders => ({
  dataSetType: 'JSON',
  encoding: 'utf-8',
  sqlDialect: undefined,
  requestId: undefined,
  fallbackRequestId: 'door-1',
  maxDepth: 8,
  ...over,
});
const run = (body: string, h = headers()) => {
  const envelope = openEnvelope(Buffer.from(body), h);
  return { job: envelope.job, answer: () => JSON.parse(envelope.protect(engine).payload.toString('utf8')) as Record<string, unknown>, raw: () => envelope.protect(engine).payload.toString('utf8') };
};
const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof DpgError, String(err));
    return `${err.code}: ${err.message}`;
  }
  return 'no error';
};

describe('/api/protect envelope: a written dataSet and the full path agree', () => {
  it('protects an array or object dataSet as written (spacing, big numbers, key order kept)', () => {
    const body = '{ "dataSet" : [ {"id": 12345678901234567890, "name":"Jane Doe",  "city":"Paris"} ] , "manifestName":"customer","jobType":"Mask","requestId":"q-7"}';
    const r = run(body);
    assert.equal(r.job.context.requestId, 'q-7');
    const text = r.raw();
    assert.ok(text.startsWith('{"dataSet":[ {"id": 12345678901234567890, "name":"'), text);
    assert.ok(!text.includes('Jane Doe'));
    assert.ok(text.includes('"city":"Paris"} ]'));
    const asObject = run('{"manifestName":"customer","jobType":"Mask","dataSet":{"email":"jane.doe@example.com"}}').answer();
    assert.deepEqual(Object.keys(asObject), ['dataSet', 'requestId', 'manifestName', 'jobType', 'dataSetType', 'summary']);
    assert.equal(asObject.requestId, 'door-1');
    assert.equal((asObject.summary as { protected: number }).protected, 1);
  });

  it('a string of JSON text, base64, XML: the full path, unchanged', () => {
    const asString = run(JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: JSON.stringify({ name: 'Jane Doe' }) })).answer();
    assert.equal(typeof asString.dataSet, 'string');
    assert.ok(!String(asString.dataSet).includes('Jane Doe'));
    const b64 = Buffer.from(JSON.stringify({ name: 'Jane Doe' })).toString('base64');
    const asBase64 = run(JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: b64 }), headers({ encoding: 'base64' })).answer();
    assert.ok(!Buffer.from(String(asBase64.dataSet), 'base64').toString('utf8').includes('Jane Doe'));
  });

  it('errors are the same, found in the same order', () => {
    // Bad syntax inside the dataSet or around it: the body is refused before anything else.
    assert.equal(code(() => run('{"manifestName":"customer","jobType":"Mask","dataSet":[1,]}')), 'INVALID_REQUEST: The request body is not valid JSON');
    assert.equal(code(() => run('{"manifestName":"customer","jobType":"Mask","dataSet":[1]')), 'INVALID_REQUEST: The request body is not valid JSON');
    assert.equal(code(() => run('[{"dataSet":[1]}]')), 'INVALID_REQUEST: The request body must be a JSON object');
    // A dataSet given twice: refused when protecting, after the job was read (a bad job is named first).
    const twice = '{"manifestName":"customer","jobType":"Mask","dataSet":[{"name":"Jane Doe"}],"dataSet":[1]}';
    const envelope = openEnvelope(Buffer.from(twice), headers());
    assert.equal(code(() => envelope.protect(engine)), 'INVALID_REQUEST: Field dataSet is given more than once');
    assert.match(code(() => run(twice.replace('"Mask"', '"Nope"'))), /^INVALID_REQUEST: .*jobType/);
    // Deeper than the limit: found when protecting too, as before.
    const deep = `{"manifestName":"customer","jobType":"Mask","dataSet":${'['.repeat(12)}1${']'.repeat(12)}}`;
    const deepEnvelope = openEnvelope(Buffer.from(deep), headers());
    assert.match(code(() => deepEnvelope.protect(engine)), /^MALFORMED_DATA_SET: .*deeper than the limit/);
    assert.equal(code(() => run('{"manifestName":"customer","jobType":"Mask"}').raw()), 'INVALID_REQUEST: Field dataSet is required');
    assert.equal(code(() => run('{"manifestName":"customer","jobType":"Mask","dataSet":7}').raw()), 'INVALID_REQUEST: Field dataSet must be a JSON object or array (or a string of JSON text)');
  });
});
