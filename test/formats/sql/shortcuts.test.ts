// Issue 21: the shortcuts for literals written as themselves (no backslash, no quote inside) give
// what the general readers and writers give, in every dialect: decodeString the value decodeWriting
// reads, rewriteString the bytes followWriting writes; and the readers on the token arrays
// (decodeStringAt, rewriteStringAt, binaryBytesAt) what the same readers give on the token object.
// Literals are generated with every character that matters to some dialect (backslash, both quotes,
// line breaks, characters beyond U+FFFF).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sqlDialect, SQL_DIALECTS, type SqlDialect } from '../../../src/formats/sql/dialects.ts';
import { binaryBytes, binaryBytesAt, decodeString, decodeStringAt, decodeWriting, followWriting, readsAsWritten, rewriteString, rewriteStringAt } from '../../../src/formats/sql/literals.ts';
import { SourcePositions, tokenizeSql, type SqlToken, type SqlTokens } from '../../../src/formats/sql/tokenizer.ts';

const CHARS = ['a', 'Z', '7', ' ', '-', '@', '.', '*', '%', '_', 'é', '💳', '\\', "'", '"', '`', '$', '\n', '\r', '\t'];
const text = fc.array(fc.constantFrom(...CHARS), { maxLength: 12 }).map((cs) => cs.join(''));
/** Mostly plain text, so both sides of each shortcut are exercised. */
const mostlyPlain = fc.oneof({ weight: 3, arbitrary: fc.array(fc.constantFrom('a', 'Z', '7', ' ', '-', '@', '.', 'é', '💳'), { maxLength: 12 }).map((cs) => cs.join('')) }, { weight: 2, arbitrary: text });

/** The text written as a string literal of the dialect, in one of its spellings. */
function literal(d: SqlDialect, content: string, form: number): string {
  const doubled = (q: string): string => `${q}${content.replaceAll(q, q + q)}${q}`;
  const backslashed = (q: string): string => `${q}${content.replaceAll('\\', '\\\\').replaceAll(q, '\\' + q).replaceAll('\n', '\\n')}${q}`;
  const plain = d.backslashEscapes ? (d.doubledQuoteEscape && form % 2 === 0 ? doubled("'").replaceAll('\\', '\\\\') : backslashed("'")) : doubled("'");
  if (form === 2) return `N${plain}`;
  if (form === 3 && d.doubleQuoteIsString) return backslashed('"');
  return plain;
}

/** The string token of `SELECT <literal>` (index 1 of the tokens), or undefined where the dialect refuses the writing. */
function stringToken(d: SqlDialect, sql: string): { t: SqlToken; tokens: SqlTokens } | undefined {
  try {
    const tokens = tokenizeSql(sql, d, new SourcePositions(sql), { maxDepth: 8 }).tokens;
    const t = tokens.token(1);
    return t?.kind === 'string' ? { t, tokens } : undefined;
  } catch {
    return undefined;
  }
}

function attempt<T>(run: () => T): { value: T } | { error: string } {
  try {
    return { value: run() };
  } catch (err) {
    return { error: String(err) };
  }
}

describe('SQL literal shortcuts agree with the general readers and writers', () => {
  for (const name of SQL_DIALECTS) {
    it(`${name}: same values read, same bytes written`, () => {
      const d = sqlDialect(name);
      let shortcuts = 0;
      let general = 0;
      fc.assert(
        fc.property(mostlyPlain, fc.nat(3), mostlyPlain, fc.boolean(), (content, form, other, masked) => {
          const sql = `SELECT ${literal(d, content, form)}`;
          const found = stringToken(d, sql);
          if (found === undefined) return;
          const { t, tokens } = found;
          const read = attempt(() => decodeString(sql, t, d));
          assert.deepEqual(read, attempt(() => decodeWriting(sql, t, d)), sql);
          assert.deepEqual(attempt(() => decodeStringAt(tokens, 1, d)), read, sql);
          assert.deepEqual(binaryBytesAt(tokens, 1, d), binaryBytes(sql, t, d), sql);
          if (!('value' in read)) return;
          if (readsAsWritten(sql, t)) shortcuts++;
          else general++;
          const before = read.value;
          // A masked value keeps the length (the kept-writing case); another text changes it.
          const after = masked ? before.replace(/[a-zA-Z0-9]/g, '*') : other;
          assert.equal(rewriteString(sql, t, before, after, d), followWriting(sql, t, before, after, d), `${sql} → ${JSON.stringify(after)}`);
          assert.equal(rewriteStringAt(tokens, 1, before, after, d), rewriteString(sql, t, before, after, d), `${sql} → ${JSON.stringify(after)}`);
        }),
        { numRuns: 400, seed: 2121 },
      );
      assert.ok(shortcuts > 50 && general > 20, `${name}: ${shortcuts} literals on the shortcut, ${general} on the general path`);
    });
  }
});
