// Bytes a rule did not change stay as sent (issue 17): in XML character data and attributes and in
// SQL string literals, a changed value rewrites only its changed characters; Pseudonymise then
// Reconstruct gives back the exact bytes, whatever escaping the sender chose.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { job, testEngine } from '../helpers/engine.ts';
import type { JobType } from '../../src/core/types.ts';

const engine = testEngine();
const run = (type: 'XML' | 'SQL', jobType: JobType, text: string, sqlDialect?: string): string =>
  engine.protectDocument(job('customer', jobType, sqlDialect ? { sqlDialect } : {}, type), text).dataSet as string;

describe('the writing of unchanged characters is kept', () => {
  it('XML: a raw `>`, references and a CRLF around and inside a rewritten value', () => {
    const xml = '<r><phone>+4phone>+44 20 7946 0958</phone><note a="x>y">a &#65; > 4111 1111 1111 1111 &gt; b\r\nc</note></r>';
    const masked = run('XML', 'Mask', xml);
    assert.equal(masked, '<r><phone>+*phone>+** ** **** 0958</phone><note a="x>y">a &#65; > **** **** **** 1111 &gt; b\r\nc</note></r>');
    const p = run('XML', 'Pseudonymise', xml);
    assert.ok(p.includes('phone>+') && p.includes('a &#65; > ') && p.includes(' &gt; b\r\nc'), p);
    assert.equal(run('XML', 'Reconstruct', p), xml);
  });

  it('SQL: Snowflake `\\<`, a doubled quote and `\\x41` outside and inside a rewritten literal', () => {
    const sql = "INSERT INTO customers (phone, note) VALUES ('\\<010 0000 0000', 'it''s \\x41 4111 1111 1111 1111 \\< ok');";
    const p = run('SQL', 'Pseudonymise', sql, 'snowflake');
    assert.match(p, /VALUES \('\\<\d{3} \d{4} \d{4}', 'it''s \\x41 \d{4} \d{4} \d{4} 1111 \\< ok'\);$/);
    assert.equal(run('SQL', 'Reconstruct', p, 'snowflake'), sql);
  });

  it('SQL: MySQL escapes kept; a literal whose new value needs an escape gets one', () => {
    const sql = "UPDATE customers SET note = 'a\\'b \\% 4111 1111 1111 1111' WHERE id = 1;";
    const p = run('SQL', 'Pseudonymise', sql, 'mysql');
    assert.ok(p.startsWith("UPDATE customers SET note = 'a\\'b \\% "), p);
    assert.equal(run('SQL', 'Reconstruct', p, 'mysql'), sql);
  });
});
