// The FFI behind SO_ORIGINAL_DST (koffi) is loaded only when the transparent listener is on: the
// default gateway pays nothing for it.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { startTestProxy, proxyConfig } from '../helpers.ts';
import { transparentConfig } from './helpers.ts';

const loadedKoffi = (): boolean => Object.keys(createRequire(import.meta.url).cache).some((p) => /koffi/.test(p));

test('koffi is not loaded by a proxy without proxy.transparent, and is by one with it', { skip: process.platform !== 'linux' }, async () => {
  const plain = await startTestProxy(proxyConfig());
  await plain.close();
  assert.equal(loadedKoffi(), false);
  const transparent = await startTestProxy(proxyConfig({ transparent: transparentConfig() }));
  try {
    assert.equal(transparent.proxy.transparent.length, 1);
    assert.equal(loadedKoffi(), true);
  } finally {
    await transparent.close();
  }
});
