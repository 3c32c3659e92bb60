// The one error catalogue: every code unique, mapped to an HTTP and a gRPC status, and titled.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError, GrpcStatus, errorCatalogue, problemType, toDpgError, type ErrorCode } from '../../src/core/errors.ts';

describe('error catalogue', () => {
  const codes = Object.keys(errorCatalogue) as ErrorCode[];

  it('maps every code to an HTTP status, a gRPC status and a title', () => {
    const grpcValues = new Set<number>(Object.values(GrpcStatus));
    for (const code of codes) {
      const spec = errorCatalogue[code];
      assert.match(code, /^[A-Z][A-Z_]+$/);
      assert.ok(spec.status >= 400 && spec.status <= 599, code);
      assert.ok(grpcValues.has(spec.grpc) && (spec.grpc as number) !== GrpcStatus.OK, code);
      assert.ok(spec.title.length > 0, code);
      const err = new DpgError(code, 'detail');
      assert.equal(err.status, spec.status);
      assert.equal(err.grpcStatus, spec.grpc);
      assert.equal(problemType(code), `urn:dpg:error:${code}`);
    }
    assert.equal(new Set(codes).size, codes.length);
  });

  it('has the codes and statuses of DESIGN §4', () => {
    const expected: Record<string, [number, number]> = {
      INVALID_REQUEST: [400, GrpcStatus.INVALID_ARGUMENT],
      MALFORMED_DATA_SET: [400, GrpcStatus.INVALID_ARGUMENT],
      UNAUTHENTICATED: [401, GrpcStatus.UNAUTHENTICATED],
      FORBIDDEN: [403, GrpcStatus.PERMISSION_DENIED],
      MANIFEST_NOT_FOUND: [404, GrpcStatus.NOT_FOUND],
      PAYLOAD_TOO_LARGE: [413, GrpcStatus.RESOURCE_EXHAUSTED],
      UNSUPPORTED_DATA_SET_TYPE: [415, GrpcStatus.INVALID_ARGUMENT],
      JOB_TYPE_NOT_DEFINED: [422, GrpcStatus.FAILED_PRECONDITION],
      VALUE_NOT_PROTECTABLE: [422, GrpcStatus.FAILED_PRECONDITION],
      INTERNAL: [500, GrpcStatus.INTERNAL],
    };
    for (const [code, [status, grpc]] of Object.entries(expected)) {
      const spec = errorCatalogue[code as ErrorCode];
      assert.deepEqual([spec.status, spec.grpc], [status, grpc], code);
    }
  });

  it('never lets a foreign error message through', () => {
    const leaked = toDpgError(new SyntaxError('Unexpected token in "4111111111111111"'));
    assert.equal(leaked.code, 'INTERNAL');
    assert.ok(!leaked.message.includes('4111'));
  });
});
