// Issue 8, class 6: every dialect's comments, quotes and numbers are read the way that dialect's
// server reads them, so a comment the server executes is protected like any other SQL, and a
// construct servers could read two ways is refused (MALFORMED_DATA_SET, a position, no value).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError } from '../../../src/core/errors.ts';
import { testEngine, job } from '../../helpers/engine.ts';

const engine = testEngine();
const CARD = '4111111111111111';
const MASKED = '************1111';

function mask(sql: string, dialect: string): string {
  return engine.protectDocument(job('customer', 'Mask', { sqlDialect: dialect }, 'SQL'), sql).dataSet as string;
}

function refused(sql: string, dialect: string, reason: RegExp): void {
  assert.throws(
    () => mask(sql, dialect),
    (err: unknown) => {
      assert.ok(err instanceof DpgError, String(err));
      assert.equal(err.code, 'MALFORMED_DATA_SET');
      assert.match(err.message, /line \d+, column \d+|at \d+:\d+/);
      assert.match(err.message, reason);
      assert.ok(!err.message.includes('4111'), err.message);
      return true;
    },
    `${dialect}: ${sql}`,
  );
}

describe('SQL comments that execute (MySQL, MariaDB)', () => {
  it('reads /*! … */ as SQL: a card number inside it is protected', () => {
    for (const dialect of ['mysql', 'mariadb']) {
      assert.equal(
        mask(`UPDATE t SET note = 'x' /*!, cardNumber = '${CARD}' */ WHERE id = 1`, dialect),
        `UPDATE t SET note = 'x' /*!, cardNumber = '${MASKED}' */ WHERE id = 1`,
      );
      assert.equal(mask(`INSERT INTO t (id, cardNumber) VALUES (1, /*!'${CARD}'*/)`, dialect), `INSERT INTO t (id, cardNumber) VALUES (1, /*!'${MASKED}'*/)`);
      // Bound by position through the comment: the second row's value goes to the second column.
      assert.equal(
        mask(`INSERT INTO t (id /*!, cardNumber*/) VALUES (1 /*!, '${CARD}'*/)`, dialect),
        `INSERT INTO t (id /*!, cardNumber*/) VALUES (1 /*!, '${MASKED}'*/)`,
      );
    }
  });

  it('accepts version-conditional comments that hold whole statements, and protects inside them', () => {
    assert.equal(
      mask(`/*!40101 SET NAMES utf8mb4 */;\n/*!50001 INSERT INTO t (cardNumber) VALUES ('${CARD}') */;`, 'mysql'),
      `/*!40101 SET NAMES utf8mb4 */;\n/*!50001 INSERT INTO t (cardNumber) VALUES ('${MASKED}') */;`,
    );
    assert.equal(mask(`/*M!100100 UPDATE t SET cardNumber = '${CARD}' */;`, 'mariadb'), `/*M!100100 UPDATE t SET cardNumber = '${MASKED}' */;`);
  });

  it('refuses a version-conditional comment inside a statement (servers of other versions skip it)', () => {
    refused(`UPDATE t SET note = 'x' /*!50001 , cardNumber = '${CARD}' */ WHERE id = 1`, 'mysql', /version-conditional comment/);
    refused(`INSERT INTO t (id) VALUES (1) /*M!, ('${CARD}') */`, 'mariadb', /version-conditional comment/);
    refused(`INSERT INTO t (/*!99999 id, */ cardNumber, note) VALUES ('${CARD}', 'x')`, 'mysql', /version-conditional comment/);
    refused(`/*!50001 SELECT 1 */ /*!50013 , 2 */;`, 'mysql', /version-conditional comment/);
  });

  it('refuses executable comments it cannot read the way every server does', () => {
    refused(`SELECT 1 /*!123 , '${CARD}' */`, 'mysql', /5- or 6-digit version/);
    refused(`SELECT 1 /*! , 2 -- x\n */`, 'mysql', /line comment inside an executable comment/);
    refused(`SELECT 1 /*! , /* x */ 2 */`, 'mysql', /comment inside an executable comment/);
    refused(`SELECT 1 /*! , '${CARD}'`, 'mysql', /unterminated executable comment/);
  });

  it('is a plain comment elsewhere', () => {
    const sql = `INSERT INTO t (id) VALUES (1) /*!, ('${CARD}') */`;
    assert.equal(mask(sql, 'postgresql'), sql);
  });
});

describe('SQL line comments follow each dialect', () => {
  it('MySQL needs white space or a control character after --: "0 --\'…\'" is an expression', () => {
    for (const dialect of ['mysql', 'mariadb']) {
      refused(`INSERT INTO t (id, cardNumber) VALUES (1, 0 --'${CARD}'\n)`, dialect, /expression/);
      refused(`UPDATE t SET cardNumber = 0 --'${CARD}'\nWHERE id = 1`, dialect, /expression/);
      // With a space (or a tab, or at the very end) it is a comment.
      assert.equal(mask(`UPDATE t SET cardNumber = '${CARD}' -- '${CARD}'\n`, dialect), `UPDATE t SET cardNumber = '${MASKED}' -- '${CARD}'\n`);
      assert.equal(mask(`UPDATE t SET cardNumber = '${CARD}' --\t'x'`, dialect), `UPDATE t SET cardNumber = '${MASKED}' --\t'x'`);
      assert.equal(mask(`UPDATE t SET cardNumber = '${CARD}' --`, dialect), `UPDATE t SET cardNumber = '${MASKED}' --`);
    }
  });

  it('elsewhere -- always starts a comment', () => {
    for (const dialect of ['postgresql', 'transactsql', 'sqlite', 'bigquery', 'snowflake']) {
      assert.equal(mask(`UPDATE t SET cardNumber = '${CARD}' --'x', y = 1\n`, dialect), `UPDATE t SET cardNumber = '${MASKED}' --'x', y = 1\n`, dialect);
    }
  });

  it('# is a comment in MySQL, MariaDB and BigQuery only; // in Snowflake only', () => {
    assert.equal(mask(`UPDATE t SET cardNumber = '${CARD}' # x\n`, 'mysql'), `UPDATE t SET cardNumber = '${MASKED}' # x\n`);
    assert.equal(mask(`UPDATE t SET cardNumber = '${CARD}' # x\n`, 'bigquery'), `UPDATE t SET cardNumber = '${MASKED}' # x\n`);
    assert.equal(mask(`UPDATE t SET cardNumber = '${CARD}' // x\n`, 'snowflake'), `UPDATE t SET cardNumber = '${MASKED}' // x\n`);
    refused(`UPDATE t SET cardNumber = '${CARD}' # x`, 'sqlite', /unrecognised token/);
  });

  it('refuses a line comment that a bare carriage return ends (PostgreSQL ends it there, MySQL does not)', () => {
    for (const dialect of ['postgresql', 'mysql', 'sqlite']) {
      refused(`INSERT INTO t (id, cardNumber) VALUES (1, 'x') -- c\r, ('${CARD}')`, dialect, /bare carriage return/);
    }
    // \r\n is a line end everywhere.
    assert.equal(mask(`UPDATE t SET cardNumber = '${CARD}' -- c\r\n`, 'postgresql'), `UPDATE t SET cardNumber = '${MASKED}' -- c\r\n`);
  });
});

describe('SQL block comments: nesting per dialect', () => {
  it('PostgreSQL and T-SQL nest /* /* */ */', () => {
    for (const dialect of ['postgresql', 'transactsql']) {
      assert.equal(
        mask(`UPDATE t SET cardNumber = '${CARD}' /* a /* b */ '${CARD}' */`, dialect),
        `UPDATE t SET cardNumber = '${MASKED}' /* a /* b */ '${CARD}' */`,
      );
    }
  });

  it('SQLite ends a comment at the first */', () => {
    refused(`UPDATE t SET note = 'x' /* a /* b */ , cardNumber = 0 */`, 'sqlite', /does not parse/);
    assert.equal(mask(`UPDATE t SET cardNumber = '${CARD}' /* a /* b */`, 'sqlite'), `UPDATE t SET cardNumber = '${MASKED}' /* a /* b */`);
  });

  it('dialects whose servers disagree about nesting refuse /* inside a comment', () => {
    for (const dialect of ['mysql', 'mariadb', 'bigquery', 'snowflake']) {
      refused(`UPDATE t SET note = 'x' /* a /* b */ , cardNumber = '${CARD}' */`, dialect, /disagree on whether comments nest/);
    }
  });
});

describe('SQL strings and names per dialect', () => {
  it('PostgreSQL dollar-quote tags may hold any letter: $é$ … $é$ is one string', () => {
    assert.equal(
      mask(`INSERT INTO t (note, cardNumber) VALUES ($é$ -- $é$, '${CARD}')`, 'postgresql'),
      `INSERT INTO t (note, cardNumber) VALUES ($é$ -- $é$, '${MASKED}')`,
    );
    assert.equal(mask(`INSERT INTO t (cardNumber) VALUES ($é$${CARD}$é$)`, 'postgresql'), `INSERT INTO t (cardNumber) VALUES ('${MASKED}')`);
  });

  it('SQLite and T-SQL may read a "…" name as a string: bound to a protected column, it is refused', () => {
    for (const dialect of ['sqlite', 'transactsql']) {
      refused(`INSERT INTO t (cardNumber) VALUES ("${CARD}")`, dialect, /double-quoted name/);
      refused(`UPDATE t SET cardNumber = "${CARD}"`, dialect, /double-quoted name/);
      refused(`SELECT * FROM t WHERE "${CARD}" = cardNumber`, dialect, /double-quoted name/);
      refused(`SELECT * FROM t WHERE cardNumber IN ('1', "${CARD}")`, dialect, /double-quoted name|expression/);
      // Quoted names elsewhere are ordinary.
      assert.equal(mask(`INSERT INTO "t" ("cardNumber") VALUES ('${CARD}')`, dialect), `INSERT INTO "t" ("cardNumber") VALUES ('${MASKED}')`);
    }
  });

  it('BigQuery has no doubled-quote escape: triple-quoted strings and \'\' are refused', () => {
    refused(`INSERT INTO t (cardNumber) VALUES ('''${CARD}''')`, 'bigquery', /triple-quoted/);
    refused(`INSERT INTO t (note, cardNumber) VALUES ('a''b', '${CARD}')`, 'bigquery', /doubled quote/);
    assert.equal(mask(`INSERT INTO t (cardNumber) VALUES ('${CARD}\\'')`, 'bigquery'), `INSERT INTO t (cardNumber) VALUES ('${MASKED}\\'')`);
  });

  it('a number glued to letters is refused outside the MySQL family (PostgreSQL 16 reads 4111_1111 as a number)', () => {
    for (const dialect of ['postgresql', 'transactsql', 'sqlite', 'bigquery', 'snowflake']) {
      refused(`INSERT INTO t (cardNumber) VALUES (4111_1111_1111_1111)`, dialect, /number directly followed by letters/);
    }
    assert.equal(mask('SELECT 1abc FROM t', 'mysql'), 'SELECT 1abc FROM t');
  });

  it('refuses a NUL character anywhere in the text', () => {
    for (const dialect of ['mysql', 'postgresql']) refused(`UPDATE t SET note = 'x\0', cardNumber = '${CARD}'`, dialect, /NUL character/);
  });

  it('MySQL reads backslash escapes (the server default): O\\\'Brien is one string', () => {
    assert.equal(
      mask(`INSERT INTO t (note, cardNumber) VALUES ('O\\'Brien', '${CARD}')`, 'mysql'),
      `INSERT INTO t (note, cardNumber) VALUES ('O\\'Brien', '${MASKED}')`,
    );
  });
});

describe('SQL that changes how the server reads what follows', () => {
  it('refuses sql_mode values that change quoting or escapes, and values only the server knows', () => {
    for (const mode of ["'NO_BACKSLASH_ESCAPES'", "'ANSI'", "'STRICT_ALL_TABLES,ANSI_QUOTES'", 'CONCAT(@@sql_mode, \',ANSI_QUOTES\')', '@unknown']) {
      refused(`SET sql_mode = ${mode};\nUPDATE t SET cardNumber = '${CARD}';`, 'mysql', /sql_mode may not be changed/);
    }
    refused(`SET @m = 'ANSI'; SET SESSION sql_mode = @m;`, 'mysql', /sql_mode/);
    refused(`SET @@session.sql_mode := 'NO_BACKSLASH_ESCAPES';`, 'mariadb', /sql_mode/);
  });

  it('accepts what mysqldump writes: a saved mode, restored', () => {
    const sql =
      `/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;\n` +
      `INSERT INTO t (cardNumber) VALUES ('${CARD}');\n/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;`;
    assert.equal(mask(sql, 'mysql'), sql.replace(CARD, MASKED));
  });

  it('refuses client character sets in which a backslash or quote can be half of a character', () => {
    refused(`SET NAMES gbk;\nUPDATE t SET cardNumber = '${CARD}';`, 'mysql', /character set/);
    refused(`SET character_set_client = 'sjis';`, 'mysql', /character set/);
    refused(`SET client_encoding = 'SJIS';`, 'postgresql', /client_encoding/);
    assert.equal(mask(`SET NAMES utf8mb4;\nUPDATE t SET cardNumber = '${CARD}';`, 'mysql'), `SET NAMES utf8mb4;\nUPDATE t SET cardNumber = '${MASKED}';`);
  });

  it('refuses turning PostgreSQL standard_conforming_strings off, however it is written', () => {
    refused(`SET standard_conforming_strings = off;`, 'postgresql', /standard_conforming_strings/);
    refused(`SET SESSION standard_conforming_strings TO 'off';`, 'postgresql', /standard_conforming_strings/);
    refused(`SELECT set_config('standard_conforming_strings', 'off', false);`, 'postgresql', /standard_conforming_strings/);
    const dumpHeader = `SET standard_conforming_strings = on;\nSELECT pg_catalog.set_config('search_path', '', false);\nUPDATE t SET cardNumber = '${CARD}';`;
    assert.equal(mask(dumpHeader, 'postgresql'), dumpHeader.replace(CARD, MASKED));
  });
});

describe('SQL carried in strings (dynamic SQL, routine bodies)', () => {
  it('is refused when it carries literals: the server runs it, the gateway cannot read it', () => {
    refused(`EXEC('INSERT INTO t (cardNumber) VALUES (''${CARD}'')')`, 'transactsql', /server runs but the gateway cannot read/);
    refused(`EXEC sp_executesql N'UPDATE t SET cardNumber = ''${CARD}''';`, 'transactsql', /server runs/);
    refused(`DO $$ BEGIN INSERT INTO t (cardNumber) VALUES ('${CARD}'); END $$;`, 'postgresql', /server runs/);
    refused(
      `CREATE FUNCTION f() RETURNS void AS $$ INSERT INTO t (cardNumber) VALUES ('${CARD}') $$ LANGUAGE sql;`,
      'postgresql',
      /server runs|does not parse/,
    );
  });
});
