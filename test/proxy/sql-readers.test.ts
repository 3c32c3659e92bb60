// Issue 16, classes 4 and 5 through the real egress proxy: SQL bodies spelling personal data with escape
// forms, or carrying it into a protected column through derived tables and variables, are sent to a
// loopback upstream that records every byte. Either the body arrives protected — and, run in a real
// SQLite or PostgreSQL, stores no clear value — or the proxy refuses it and the upstream gets nothing.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ProxyAgent, request } from 'undici';
import { SQLITE_MISSING, sqlite, sqliteAvailable, startPostgres, type Postgres } from '../helpers/sql-servers.ts';
import { CARD, proxyConfig, route, startTestProxy, startUpstream, type TestProxy, type Upstream } from './helpers.ts';

const NAME = 'Jane Doe';
const EMAIL = 'jane.doe@example.com';

describe('SQL escape strings and literal paths through the proxy (issue 16, classes 4 and 5)', () => {
  let upstream: Upstream;
  let p: TestProxy;
  let agent: ProxyAgent;
  let pg: Postgres | string = 'not started';

  before(async () => {
    upstream = await startUpstream();
    const at = (path: string) => ({ host: '127.0.0.1', port: upstream.port, path });
    const sql = (dialect: string) =>
      route(`sql-${dialect}`, { match: at(`/sql/${dialect}`), request: { manifest: 'customer', jobType: 'Mask', dataSetType: 'SQL', sqlDialect: dialect } });
    p = await startTestProxy(proxyConfig({ routes: ['mysql', 'postgresql', 'sqlite', 'transactsql', 'bigquery', 'snowflake'].map(sql) }));
    agent = new ProxyAgent({ uri: p.url, proxyTunnel: false });
    pg = startPostgres();
  });

  after(async () => {
    await agent.close();
    await p.close();
    await upstream.close();
    if (typeof pg !== 'string') pg.close();
  });

  async function send(dialect: string, body: string): Promise<{ status: number; answer: string; received: string | undefined; raw: Buffer }> {
    const before = upstream.received.length;
    const rawBefore = upstream.rawBytes().length;
    const res = await request(`${upstream.origin}/sql/${dialect}`, { dispatcher: agent, method: 'POST', headers: { 'content-type': 'application/sql' }, body });
    const answer = await res.body.text();
    const got = upstream.received.slice(before);
    assert.ok(got.length <= 1);
    return { status: res.statusCode, answer, received: got[0]?.body.toString('utf8'), raw: upstream.rawBytes().subarray(rawBefore) };
  }

  /** Forwarded as `expected`, with none of `clear` on the wire. */
  async function protectedAs(dialect: string, body: string, expected: string, clear: string[]): Promise<string> {
    const r = await send(dialect, body);
    assert.equal(r.status, 200, r.answer);
    assert.equal(r.received, expected);
    for (const c of clear) assert.ok(!r.raw.includes(c), `${c} reached the upstream in clear`);
    return r.received!;
  }

  async function refused(dialect: string, body: string, reason: RegExp): Promise<void> {
    const r = await send(dialect, body);
    assert.equal(r.received, undefined, 'nothing may be sent upstream');
    assert.equal(r.raw.length, 0, 'no byte may reach the upstream');
    assert.equal(r.status, 400, r.answer);
    const problem = JSON.parse(r.answer) as { code: string; detail: string };
    assert.equal(problem.code, 'MALFORMED_DATA_SET');
    assert.match(problem.detail, reason);
    for (const s of [CARD, NAME, EMAIL, 'Jane']) assert.ok(!r.answer.includes(s), `the answer echoes ${s}`);
  }

  test('class 4: PostgreSQL E\'…\' and U&\'…\' escapes are decoded; the masked value stays in the same form, and PostgreSQL stores it masked', async (t) => {
    const body = String.raw`INSERT INTO customers (name, cardNumber, note) VALUES (E'J\x61ne\040D\u006Fe', E'\x34111 1111 1111 1111', U&'mail jane.doe\0040example.com');`;
    const out = await protectedAs(
      'postgresql',
      body,
      // Characters the rule kept keep their writing (the space as \040, the @ as \0040); changed ones are written plainly.
      String.raw`INSERT INTO customers (name, cardNumber, note) VALUES (E'J***\040D**', E'**** **** **** 1111', U&'mail j***\0040example.com');`,
      [CARD, NAME],
    );
    if (typeof pg === 'string') {
      t.diagnostic(`${pg}: the stored values were not checked in PostgreSQL`);
      return;
    }
    const r = pg.psql(`CREATE TEMP TABLE customers (name text, cardNumber text, note text);\n${out}\nSELECT name || '|' || cardNumber || '|' || note FROM customers;`);
    assert.ok(r.ok, r.ok ? '' : r.err);
    assert.equal(r.out.replace(/\0$/, ''), 'J*** D**|**** **** **** 1111|mail j***@example.com');
  });

  test('class 4: BigQuery \\u and octal escapes, Snowflake hex escapes are decoded before masking', async () => {
    await protectedAs('bigquery', String.raw`INSERT INTO customers (cardNumber) VALUES ('\u0034111 \0611\x311 1111 1111');`, `INSERT INTO customers (cardNumber) VALUES ('**** **** **** 1111');`, [CARD]);
    await protectedAs('snowflake', String.raw`INSERT INTO customers (name) VALUES ('\x4aane Doe');`, String.raw`INSERT INTO customers (name) VALUES ('\x4a*** D**');`, [NAME]);
  });

  test('class 4: escapes that cannot be read with certainty, literals in a row and binary literals are refused', async () => {
    await refused('postgresql', String.raw`INSERT INTO customers (cardNumber) VALUES (E'4111\4011111 1111 1111');`, /octal/);
    await refused('postgresql', `INSERT INTO customers (name) VALUES ('Jane'\n' Doe');`, /two string literals/);
    await refused('mysql', `INSERT INTO customers (name) VALUES (0x${Buffer.from(NAME).toString('hex')});`, /binary literal/);
    await refused('sqlite', `INSERT INTO customers (note) VALUES (X'${Buffer.from(CARD).toString('hex')}');`, /detected data/);
  });

  test('class 5: derived tables, WITH queries and VALUES lists carrying a name are refused; SQLite shows the unprotected body would store it', async (t) => {
    const bodies = [
      `INSERT INTO customers (name) SELECT * FROM (SELECT 'Jane Doe') t;`,
      `INSERT INTO customers (name) SELECT x FROM (SELECT 'Jane Doe' AS x) t;`,
      `WITH t AS (SELECT 'Jane Doe' AS a) INSERT INTO customers (name) SELECT a FROM t;`,
      `INSERT INTO customers (name) SELECT * FROM (VALUES ('Jane Doe')) v;`,
    ];
    for (const body of bodies) await refused('sqlite', body, /could not|unnamed|column|WITH|does not parse/);
    if (!sqliteAvailable()) {
      t.diagnostic(`${SQLITE_MISSING}: the unprotected bodies were not run`);
      return;
    }
    for (const body of bodies) {
      try {
        assert.match(sqlite(`CREATE TABLE customers (name TEXT);\n${body}\nSELECT name FROM customers;`), /Jane Doe/);
      } catch {
        // a body this SQLite rejects stores nothing
      }
    }
  });

  test('class 5: INSERT … SELECT and parenthesised queries are masked in place, and SQLite stores the masked name', async (t) => {
    const out = await protectedAs(
      'sqlite',
      `INSERT INTO customers (name) SELECT 'Jane Doe' UNION ALL SELECT 'Joe Bloggs';`,
      `INSERT INTO customers (name) SELECT 'J*** D**' UNION ALL SELECT 'J** B*****';`,
      [NAME],
    );
    await protectedAs('postgresql', `INSERT INTO customers (name) (SELECT 'Jane Doe');`, `INSERT INTO customers (name) (SELECT 'J*** D**');`, [NAME]);
    if (!sqliteAvailable()) {
      t.skip(`${SQLITE_MISSING}: the SQLite reader check did not run`);
      return;
    }
    assert.equal(sqlite(`CREATE TABLE customers (name TEXT);\n${out}\nSELECT name FROM customers;`), 'J*** D**\nJ** B*****\n');
  });

  test('class 5: MySQL and T-SQL variables carrying a name are masked where they are set; unknown ones are refused', async () => {
    await protectedAs(
      'mysql',
      `SET @n = 'Jane Doe';\nINSERT INTO customers (name) VALUES (@n);`,
      `SET @n = 'J*** D**';\nINSERT INTO customers (name) VALUES (@n);`,
      [NAME],
    );
    await protectedAs(
      'transactsql',
      `DECLARE @n NVARCHAR(50) = N'Jane Doe';\nINSERT INTO customers (name) VALUES (@n);`,
      `DECLARE @n NVARCHAR(50) = N'J*** D**';\nINSERT INTO customers (name) VALUES (@n);`,
      [NAME],
    );
    await refused('mysql', `SELECT 'Jane Doe' INTO @n;\nINSERT INTO customers (name) VALUES (@n);`, /variable n/);
    await refused('mysql', `INSERT INTO customers (name) VALUES (@n);`, /not assigned in this script/);
    await refused('transactsql', `DECLARE @s NVARCHAR(200) = N'SELECT 1'; EXEC(@s);`, /dynamic SQL/);
    await refused('mysql', `CALL add_customer('Jane Doe');`, /routine or prepared statement/);
  });
});
