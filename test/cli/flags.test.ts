// The CLI framework's flag parsing (src/cli/command.ts): a value flag followed by a negative number
// takes it as its value, as the `=` form does, so the flag's own range message is what users see.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { integerFlag, parseFlags, UsageError, type FlagSpec } from '../../src/cli/command.ts';

const spec = {
  wait: { type: 'string', short: 'w' },
  name: { type: 'string', short: 'n', multiple: true },
  quiet: { type: 'boolean', short: 'q' },
} satisfies FlagSpec;

test('a negative number after a value flag is its value, long or short, like the = form', () => {
  for (const args of [['--wait', '-5'], ['-w', '-5'], ['--wait=-5'], ['-w-5']]) {
    assert.equal(parseFlags(args, spec).values.wait, '-5', args.join(' '));
    assert.throws(() => integerFlag(parseFlags(args, spec).values.wait, 'wait', { min: 0, max: 3600 }), (err: unknown) => {
      assert.ok(err instanceof UsageError);
      assert.equal(err.message, '--wait must be a whole number from 0 to 3600 (got "-5")');
      return true;
    });
  }
  assert.deepEqual(parseFlags(['-n', '-1', '--name', '-2.5', 'pos'], spec).values.name, ['-1', '-2.5']);
  assert.deepEqual(parseFlags(['--wait', '-1', 'a', '-q'], spec).positionals, ['a']);
});

test('nothing else changes: dash values that are not numbers, boolean flags, and everything after --', () => {
  // A value starting with a dash that is not a number stays ambiguous (it may be a forgotten value).
  assert.throws(() => parseFlags(['--wait', '-q'], spec), (err: unknown) => err instanceof UsageError && /ambiguous/.test(err.message));
  // A boolean flag takes no value: -1 is then an unknown flag, as before.
  assert.throws(() => parseFlags(['--quiet', '-1'], spec), (err: unknown) => err instanceof UsageError && /Unknown option '-1'/.test(err.message));
  const r = parseFlags(['--', '--wait', '-5'], spec);
  assert.equal(r.values.wait, undefined);
  assert.deepEqual(r.positionals, ['--wait', '-5']);
  // An unknown flag before a negative number is still unknown.
  assert.throws(() => parseFlags(['--nope', '-5'], spec), (err: unknown) => err instanceof UsageError && /Unknown option '--nope'/.test(err.message));
});
