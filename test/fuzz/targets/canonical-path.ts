// The proxy's reading of a request target (src/proxy/reading/canonical-path.ts): hostile targets
// built from the pieces that split servers (escapes, dot segments, `;params`, `//`, `\`, `#`).
// Never throws; a refusal quotes nothing of the target; an accepted target has one canonical path
// that is read the same way again, with no dot segment and visible ASCII only.

import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readPath, routeView, targetOf } from '../../../src/proxy/reading/canonical-path.ts';
import type { FuzzTarget } from '../harness.ts';
import { anyCodePoints } from './code-points.ts';

const piece = fc.oneof(
  fc.constantFrom('/', '//', '.', '..', '/./', '/../', ';', ';x', '?', '#', '\\', '%', '%2', '%2f', '%2F', '%5c', '%25', '%2525', '%41', '%7e', '%00', '%1f', '%7F', '%e9', '%C3%A9', '%3B', '%2E', '%2e%2e', 'a', 'v1', 'customers', '~', '-', '_', '*', '@', ':', '&', '=', '+', ' ', '\t', 'é'),
  fc.string({ maxLength: 4 }),
);
const targetArb = fc.oneof(
  { weight: 4, arbitrary: fc.array(piece, { maxLength: 12 }).map((p) => '/' + p.join('')) },
  { weight: 1, arbitrary: fc.array(piece, { maxLength: 12 }).map((p) => p.join('')) },
  { weight: 1, arbitrary: anyCodePoints(40) },
);

export const canonicalPathTarget: FuzzTarget<string> = {
  name: 'canonical-path',
  covers: 'proxy request-target reading (src/proxy/reading/canonical-path.ts): readPath, targetOf, routeView',
  arbitrary: targetArb,
  check(target) {
    const r = readPath(target);
    if (!r.ok) {
      assert.ok(target.length < 6 || !r.reason.includes(target), 'the refusal quotes the target');
      return;
    }
    assert.ok(r.path.startsWith('/') && /^[\x21-\x7e]*$/.test(r.path), 'canonical path outside visible ASCII or not absolute');
    assert.ok(!/\/\.\.?(?:\/|$)/.test(r.path), 'a dot segment left in the canonical path');
    assert.equal(r.routePath, routeView(r.path));
    // What goes upstream is read the same way again: the canonical form is a fixed point.
    const again = readPath(targetOf(r));
    assert.ok(again.ok, `the canonical target is refused when read again (${again.ok ? '' : again.reason})`);
    assert.equal(again.path, r.path);
    assert.equal(again.query, r.query);
  },
  cost: 0.2,
};

export default canonicalPathTarget;
