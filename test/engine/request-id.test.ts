// Review finding 9: a client's request id was logged and echoed as sent (`X-Request-Id:
// 4111111111111111` appeared in the proxy's audit line). Every door now takes a client's id only when
// the content scanner finds nothing in it; otherwise a fresh id is used and the client's goes nowhere.
// The doors themselves are exercised through a real `dpg serve` in test/e2e/review-findings.test.ts.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Metadata } from '@grpc/grpc-js';
import { acceptedRequestId } from '../../src/engine/request-id.ts';
import { parseJobRequest } from '../../src/engine/request.ts';
import { clientRequestIdFrom } from '../../src/transport/http/request-id.ts';
import { jobOfBody } from '../../src/transport/http/exchange.ts';
import { pickRequestId } from '../../src/transport/grpc/protect-values.ts';

const PERSONAL = ['4111111111111111', '4111-1111-1111-1111', 'req-4111111111111111-1', '123-45-6789', '415-555-0132', 'DE89370400440532013000', '192.0.2.10', '2001:db8::1'];
const PLAIN = ['abc', 'a1b2c3', '123e4567-e89b-12d3-a456-426614174000', 'trace:0af7651916cd43dd8448eb211c80319c', '2024-01-01T12:00:00.123Z', 'job-42', 'batch.2024.11.22', '1700000000000'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('client request ids (finding 9)', () => {
  for (const id of PERSONAL) it(`refuses ${id}`, () => assert.equal(acceptedRequestId(id), undefined));
  for (const id of PLAIN) it(`keeps ${id}`, () => assert.equal(acceptedRequestId(id), id));

  it('malformed ids stay refused (not a string, spaces, too long)', () => {
    for (const id of [undefined, 42, ['a'], 'a b', 'x'.repeat(129), '']) assert.equal(acceptedRequestId(id), undefined);
  });

  it('HTTP headers: X-Request-Id or Request-Id', () => {
    const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
    assert.equal(clientRequestIdFrom(req({ 'x-request-id': '4111111111111111' })), undefined);
    assert.equal(clientRequestIdFrom(req({ 'request-id': '415-555-0132' })), undefined);
    assert.equal(clientRequestIdFrom(req({ 'x-request-id': 'job-42' })), 'job-42');
  });

  it('a body requestId holding personal data is replaced by a fresh id, not an error that could echo it', () => {
    const job = parseJobRequest({ manifestName: 'customer', jobType: 'Mask', requestId: '4111111111111111' });
    assert.match(job.context.requestId, UUID);
    assert.equal(parseJobRequest({ manifestName: 'customer', jobType: 'Mask', requestId: 'job-42' }).context.requestId, 'job-42');
    assert.throws(() => parseJobRequest({ manifestName: 'customer', jobType: 'Mask', requestId: 'a b' }), /could not|invalid|requestId/i);
  });

  it("HTTP bodies: the header's id wins, then the body's, then the door's own (checked once, not again)", () => {
    const body = (requestId?: string) => ({ manifestName: 'customer', jobType: 'Mask', ...(requestId === undefined ? {} : { requestId }) });
    const ids = (header: string | undefined, door = 'door-1') => ({ dataSetType: 'JSON', sqlDialect: undefined, requestId: header, fallbackRequestId: door });
    assert.equal(jobOfBody(body(), ids(undefined)).context.requestId, 'door-1');
    assert.equal(jobOfBody(body('job-42'), ids(undefined)).context.requestId, 'job-42');
    assert.equal(jobOfBody(body('job-42'), ids('hdr-7')).context.requestId, 'hdr-7');
    assert.equal(jobOfBody(body('a b'), ids('hdr-7')).context.requestId, 'hdr-7');
    // A body's id holding personal data is dropped for the door's fresh one; a malformed one is refused.
    assert.equal(jobOfBody(body('4111111111111111'), ids(undefined)).context.requestId, 'door-1');
    assert.throws(() => jobOfBody(body('a b'), ids(undefined)), /requestId/);
  });

  it('gRPC: request_id, then x-request-id metadata, then a fresh id', () => {
    const metadata = new Metadata();
    metadata.set('x-request-id', '123-45-6789');
    assert.match(pickRequestId('4111111111111111', metadata), UUID);
    const plain = new Metadata();
    plain.set('x-request-id', 'job-7');
    assert.equal(pickRequestId('4111111111111111', plain), 'job-7');
    assert.equal(pickRequestId('job-42', metadata), 'job-42');
  });
});
