// Issue 8, class 9: client-chosen names in locations and audit lines. The codecs build locations
// from plain names; safeLocation is the engine's last check and audit() the log's.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { audit } from '../../src/core/audit.ts';
import { createLogger } from '../../src/core/logger.ts';
import { isSafeName, safeLocation, safeName } from '../../src/core/safe-name.ts';

describe('safeName', () => {
  it('keeps plain identifiers and withholds everything else', () => {
    for (const name of ['cardNumber', 'card_number', 'card-number', '_x', 'a1', 'x'.repeat(64)]) assert.equal(safeName(name), name);
    for (const name of ['jane.doe@example.com', '4111111111111111', '+1 415 555 0100', 'Jane Doe', 'émile', '', 'a.b', 'x'.repeat(65), '1abc', '$x']) {
      assert.equal(safeName(name), '?', name);
      assert.equal(isSafeName(name), false);
    }
  });
});

describe('safeLocation', () => {
  it('keeps the documented shapes with plain names', () => {
    for (const location of [
      '$',
      '$.orders[3].cardNumber',
      '$[?].cardNumber',
      '/Envelope/Body/c:card/@id',
      '/orders/?/cardNumber',
      'row 3, column cardNumber',
      'row 0, column ?',
      'line 12, column email',
      'cardNumber at 1:5',
      'customers.cardNumber at 10:2',
      'form.cardNumber',
      'query.card_number',
    ]) {
      assert.equal(safeLocation(location), location);
    }
  });

  it('keeps only the leading kind of a location built elsewhere that is not one of those shapes', () => {
    assert.equal(safeLocation('form.jane.doe@example.com'), 'form.?');
    assert.equal(safeLocation('form.cardNumber[jane@example.com]'), 'form.?');
    assert.equal(safeLocation('query.4111 1111 1111 1111'), 'query.?');
    assert.equal(safeLocation('$["jane@example.com"].cardNumber'), '$.?');
    assert.equal(safeLocation('form.a..b'), 'form.?');
    assert.equal(safeLocation('row 3, column jane@example.com'), '?');
    assert.equal(safeLocation('4111111111111111'), '?');
  });
});

describe('audit', () => {
  function line(record: Parameters<typeof audit>[1]): Record<string, unknown> {
    const lines: string[] = [];
    audit(createLogger({ level: 'info', destination: { write: (l: string) => void lines.push(l) } }), record);
    return JSON.parse(lines[0]) as Record<string, unknown>;
  }

  it('replaces a manifest name, executionContext or apiType that is not a plain name', () => {
    const out = line({ door: 'http', requestId: 'r', outcome: 'MANIFEST_NOT_FOUND', durationMs: 1, manifest: 'jane.doe@example.com', executionContext: 'for 4111 1111 1111 1111', apiType: 'crm/v2' });
    assert.equal(out.manifest, '?');
    assert.equal(out.executionContext, '?');
    assert.equal(out.apiType, 'crm/v2');
    assert.ok(!JSON.stringify(out).includes('jane') && !JSON.stringify(out).includes('4111'));
  });

  it('keeps real manifest names and labels as they are', () => {
    const out = line({ door: 'grpc', requestId: 'r', outcome: 'ok', durationMs: 1, manifest: 'customer.v2', executionContext: 'nightly-export' });
    assert.equal(out.manifest, 'customer.v2');
    assert.equal(out.executionContext, 'nightly-export');
  });
});
