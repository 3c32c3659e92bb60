// Statements refused whatever the manifest says, because the gateway could not be sure to read what
// the server runs: text inside a version-conditional comment that is only part of a statement, a
// statement that changes how the server reads the rest of the script (sql_mode, character sets,
// standard_conforming_strings), and SQL carried in strings that the server runs later or at once
// (dynamic SQL, stored routines). Messages name the construct and a position, never a value.

import { DpgError } from '../../core/errors.ts';
import type { SqlDialect } from './dialects.ts';
import { IDENT, NUMBER, PARAM, STRING, WORD, type SourcePositions, type SqlToken, type SqlTokens } from './tokenizer.ts';

/** One statement's tokens [first, end) and its terminating `;` (index, or -1). */
export interface StatementTokens {
  readonly first: number;
  readonly end: number;
  readonly semi: number;
}

/** sql_mode flags that change how MySQL and MariaDB read text (quotes, backslashes); combination modes include ANSI_QUOTES. */
const LEXING_SQL_MODES = new Set(['NO_BACKSLASH_ESCAPES', 'ANSI_QUOTES', 'ANSI', 'DB2', 'MAXDB', 'MSSQL', 'ORACLE', 'POSTGRESQL']);
/**
 * Client character sets in which a byte of a multi-byte character can be `\` or `'`, so a
 * backslash or quote the gateway sees can be half of a character to the server (and back).
 */
const UNSAFE_CHARSETS = new Set([
  'big5',
  'cp932',
  'gbk',
  'gb18030',
  'sjis',
  'shiftjis',
  'shiftjis2004',
  'uhc',
  'johab',
  'win932',
  'win936',
  'win949',
  'win950',
  'windows932',
  'windows936',
  'windows949',
  'windows950',
  'mskanji',
  'cp936',
  'cp949',
  'cp950',
]);
const TRUE_WORDS = new Set(['ON', 'TRUE', 'YES', '1', 'DEFAULT']);
const STORED_CODE = new Set(['FUNCTION', 'PROCEDURE', 'TRIGGER', 'EVENT', 'RULE']);

function refused(positions: SourcePositions, token: { readonly start: number }, what: string): DpgError {
  return new DpgError('MALFORMED_DATA_SET', `SQL at ${positions.describe(token.start)}: ${what}`);
}

/**
 * Checks every statement of a script; throws MALFORMED_DATA_SET at the first refused one. Returns
 * the indexes of statements settled here that the parser need not read: MySQL's `SET NAMES x`,
 * `SET CHARACTER SET x` (checked above, carrying no data, and missing from the parser's grammar).
 */
export function guardScript(
  sql: string,
  dialect: SqlDialect,
  tokens: SqlTokens,
  statements: readonly StatementTokens[],
  positions: SourcePositions,
): Set<number> {
  const settled = new Set<number>();
  const mysql = dialect.executableComments;
  const variables = mysql ? new SessionVariables(tokens) : undefined;
  statements.forEach((st, index) => {
    if (mysql) checkConditions(tokens, st, positions);
    const word = (k: number): string => (st.first + k < st.end && tokens.kinds[st.first + k] === WORD ? tokens.text(st.first + k) : '');
    if (mysql && word(0) === 'SET') {
      // Rare enough to read on token objects.
      checkMysqlSet(sql, tokens.all(), st, positions, variables!);
      const what = word(1);
      if ((what === 'NAMES' || what === 'CHARSET' || (what === 'CHARACTER' && word(2) === 'SET')) && !hasLiteral(tokens, st, 'number')) settled.add(index);
    }
    if (dialect.name === 'postgresql') checkPostgresSettings(sql, tokens, st, positions);
    checkRunsText(dialect, tokens, st, positions, word);
  });
  return settled;
}

function hasLiteral(tokens: SqlTokens, st: StatementTokens, kind: 'number' | 'any'): boolean {
  for (let k = st.first; k < st.end; k++) {
    const t = tokens.kinds[k];
    if (t === NUMBER || (kind === 'any' && t === STRING)) return true;
  }
  return false;
}

/**
 * Text in a version-conditional comment (`/*!50001 … *\/`, `/*M! … *\/`) runs on some servers and
 * not on others. As whole statements under one condition either reading is protected; mixed into
 * a statement, the two readings bind values to different columns.
 */
function checkConditions(tokens: SqlTokens, st: StatementTokens, positions: SourcePositions): void {
  const last = st.semi >= 0 ? st.semi : st.end - 1;
  // Conditions are indexes into the script's texts: equal texts, equal indexes.
  const conditions = tokens.conditionIds;
  const condition = conditions[st.first];
  for (let i = st.first; i <= last; i++) {
    if (conditions[i] === condition) continue;
    if (i === st.semi && conditions[i] === 0) continue; // `/*!40101 SET … */;`
    throw refused(positions, { start: tokens.starts[i] }, 'a version-conditional comment (/*!NNNNN … */ or /*M! … */) holds only part of a statement; servers of different versions would read the statement differently');
  }
}

function lower(text: string): string {
  return text.toLowerCase().replace(/[-_]/g, '');
}

/** plainText of token k, on the token arrays. */
function textAt(sql: string, tokens: SqlTokens, k: number): string | undefined {
  const kind = tokens.kinds[k];
  if (kind === STRING && tokens.textIds[k] === 0) return sql.slice(tokens.contentStarts[k], tokens.contentEnds[k]);
  if (kind === WORD || kind === IDENT) return tokens.text(k);
  return undefined;
}

/** The value of a string token, or a word's text: enough for setting names and values. */
function plainText(sql: string, t: SqlToken): string | undefined {
  if (t.kind === 'string' && t.prefix === '') return sql.slice(t.contentStart, t.contentEnd);
  if (t.kind === 'word' || t.kind === 'ident') return t.kind === 'word' ? t.text : t.text;
  return undefined;
}

/**
 * User variables assigned in the script, so that `SET @saved = @@sql_mode; … SET sql_mode = @saved`
 * (what mysqldump writes) passes: a variable is as safe as every value the script gives it.
 */
class SessionVariables {
  /** Lower-cased `@name` → the token ranges of the values assigned to it ([start, end) of token indexes). */
  private readonly assigned = new Map<string, [number, number][]>();
  /** Variables also written other than by SET (`:=` in an expression, `INTO @v`): never safe. */
  private readonly tainted = new Set<string>();

  constructor(tokens: SqlTokens) {
    for (let i = 0; i < tokens.length; i++) {
      if (tokens.kinds[i] !== PARAM) continue;
      const text = tokens.text(i);
      if (!text.startsWith('@') || text.startsWith('@@')) continue;
      if ((tokens.kind(i + 1) === 'op' && tokens.text(i + 1) === ':=') || tokens.isWord(i - 1, 'INTO')) this.tainted.add(text.toLowerCase());
    }
  }

  assign(name: string, from: number, to: number): void {
    const key = name.toLowerCase();
    const list = this.assigned.get(key) ?? [];
    list.push([from, to]);
    this.assigned.set(key, list);
  }

  /** Every value the variable was given passes `safe`; unknown variables (set by earlier requests) do not. */
  holdsOnly(name: string, safe: (from: number, to: number) => boolean): boolean {
    const key = name.toLowerCase();
    const list = this.assigned.get(key);
    if (list === undefined || this.tainted.has(key)) return false;
    return list.every(([from, to]) => safe(from, to));
  }
}

/** Splits tokens [from, to) at top-level commas. */
function splitTopLevel(tokens: readonly SqlToken[], from: number, to: number): [number, number][] {
  const parts: [number, number][] = [];
  let level = 0;
  let start = from;
  for (let i = from; i < to; i++) {
    const kind = tokens[i].kind;
    if (kind === 'open') level++;
    else if (kind === 'close') level--;
    else if (kind === 'comma' && level === 0) {
      parts.push([start, i]);
      start = i + 1;
    }
  }
  parts.push([start, to]);
  return parts;
}

/**
 * MySQL `SET …`: sql_mode may not turn on a mode that changes how text is read, and the client
 * character set may not become one where `\` or `'` can hide inside a character. Values must be
 * literals, DEFAULT, a system variable, or a user variable this script set to such a value.
 */
function checkMysqlSet(sql: string, tokens: readonly SqlToken[], st: StatementTokens, positions: SourcePositions, variables: SessionVariables): void {
  let from = st.first + 1;
  let to = st.end;
  // MariaDB's SET STATEMENT a = 1, … FOR <statement>: the settings end at FOR.
  if (tokens[from]?.kind === 'word' && tokens[from].text === 'STATEMENT') {
    from++;
    for (let k = from; k < st.end; k++) if (tokens[k].kind === 'word' && tokens[k].text === 'FOR') to = k;
  }
  const isSafeMode = (a: number, b: number): boolean => safeValue(a, b, (text) => !text.toUpperCase().split(',').some((m) => LEXING_SQL_MODES.has(m.trim())));
  const isSafeCharset = (a: number, b: number): boolean => safeValue(a, b, (text) => !UNSAFE_CHARSETS.has(lower(text)));
  function safeValue(a: number, b: number, literalOk: (text: string) => boolean): boolean {
    // `utf8mb4 COLLATE …`: the collation does not matter here.
    const end = b - a >= 3 && tokens[a + 1].kind === 'word' && tokens[a + 1].text === 'COLLATE' ? a + 1 : b;
    if (end - a === 1) {
      const t = tokens[a];
      if (t.kind === 'word' && t.text === 'DEFAULT') return true;
      if (t.kind === 'param' && t.text.startsWith('@@')) return true;
      if (t.kind === 'param' && t.text.startsWith('@')) return variables.holdsOnly(t.text, (x, y) => safeValue(x, y, literalOk));
      const text = plainText(sql, t);
      return text !== undefined && literalOk(text);
    }
    // @@SESSION.sql_mode
    return end - a === 3 && tokens[a].kind === 'param' && tokens[a].text.startsWith('@@') && tokens[a + 1].kind === 'dot' && tokens[a + 2].kind === 'word';
  }
  for (const [a, b] of splitTopLevel(tokens, from, to)) {
    if (a >= b) continue;
    const first = tokens[a];
    // SET NAMES x [COLLATE y] / SET CHARACTER SET x / SET CHARSET x
    if (first.kind === 'word' && (first.text === 'NAMES' || first.text === 'CHARSET' || (first.text === 'CHARACTER' && tokens[a + 1]?.kind === 'word' && tokens[a + 1].text === 'SET'))) {
      const valueAt = first.text === 'CHARACTER' ? a + 2 : a + 1;
      if (!isSafeCharset(valueAt, b)) throw refused(positions, first, 'the client character set may only be set to one in which a quote or backslash cannot be part of another character');
      continue;
    }
    let eq = a;
    while (eq < b && !(tokens[eq].kind === 'op' && (tokens[eq].text === '=' || tokens[eq].text === ':='))) eq++;
    if (eq >= b) continue;
    const target = tokens[eq - 1];
    if (target.kind === 'param' && target.text.startsWith('@') && !target.text.startsWith('@@') && eq - 1 === a) {
      variables.assign(target.text, eq + 1, b);
      continue;
    }
    const name = lower(target.kind === 'param' ? target.text.replace(/^@@/, '') : (plainText(sql, target) ?? ''));
    if (name === 'sqlmode' && !isSafeMode(eq + 1, b)) {
      throw refused(positions, target, 'sql_mode may not be changed to a mode that changes how quotes and backslashes are read (ANSI_QUOTES, NO_BACKSLASH_ESCAPES, ANSI, …), nor to a value only the server knows');
    }
    if ((name === 'charactersetclient' || name === 'charactersetconnection') && !isSafeCharset(eq + 1, b)) {
      throw refused(positions, target, 'the client character set may only be set to one in which a quote or backslash cannot be part of another character');
    }
  }
}

/**
 * PostgreSQL: standard_conforming_strings must stay on (off makes backslashes escape in '…'), and
 * client_encoding may not become one where a backslash can be part of a character. Checked where
 * they are set: SET [SESSION|LOCAL], SET NAMES, ALTER … SET (the next sessions) and set_config().
 */
function checkPostgresSettings(sql: string, tokens: SqlTokens, st: StatementTokens, positions: SourcePositions): void {
  const isWord = (k: number, text: string): boolean => k >= st.first && k < st.end && tokens.isWord(k, text);
  for (let i = st.first; i < st.end; i++) {
    // Where a setting is named (checked first: it costs no copy of the name).
    const setting = isWord(i - 1, 'SET') || ((isWord(i - 1, 'SESSION') || isWord(i - 1, 'LOCAL')) && isWord(i - 2, 'SET'));
    const call = tokens.kind(i - 1) === 'open' && isWord(i - 2, 'SET_CONFIG');
    if (!setting && !call) continue;
    let name = lower(textAt(sql, tokens, i) ?? '');
    if (tokens.isWord(i, 'NAMES')) name = 'clientencoding';
    if (name !== 'standardconformingstrings' && name !== 'clientencoding') continue;
    let v = i + 1;
    if (call ? tokens.kind(v) === 'comma' : (tokens.kind(v) === 'op' && tokens.text(v) === '=') || isWord(v, 'TO')) v++;
    else if (call || name !== 'clientencoding') v = st.end; // no value where one belongs: refuse
    const value = v < st.end ? textAt(sql, tokens, v) : undefined;
    const next = tokens.kind(v + 1);
    const ends = v + 1 >= st.end || next === undefined || next === 'comma' || next === 'close' || next === 'semi';
    const ok = value !== undefined && ends && (name === 'standardconformingstrings' ? TRUE_WORDS.has(value.toUpperCase()) : !UNSAFE_CHARSETS.has(lower(value)));
    if (!ok) {
      throw refused(
        positions,
        { start: tokens.starts[i] },
        name === 'standardconformingstrings'
          ? 'standard_conforming_strings may not be turned off (backslashes would then escape in strings the gateway reads as plain)'
          : 'client_encoding may only be set to an encoding in which a backslash cannot be part of another character',
      );
    }
  }
}

/**
 * SQL the server runs but the gateway never reads. Dynamic SQL — PREPARE, EXECUTE IMMEDIATE,
 * PostgreSQL's DO, T-SQL's EXEC('…') / EXEC(@sql) and sp_executesql — is refused outright: its text
 * is a literal or a variable, and either way the values in it cannot be bound to columns. Bodies of
 * stored functions, procedures, triggers and events (run later, on every call) are refused when they
 * carry a literal. Calls — CALL, T-SQL's EXEC proc, PostgreSQL's EXECUTE name(…) and MySQL's
 * EXECUTE … USING — are refused when they pass a literal or a variable: the routine or prepared
 * statement puts its arguments in columns the gateway cannot see.
 */
function checkRunsText(dialect: SqlDialect, tokens: SqlTokens, st: StatementTokens, positions: SourcePositions, word: (k: number) => string): void {
  const head = word(0);
  let dynamic = false;
  let body = false;
  let call = false;
  if (head === 'PREPARE' || (head === 'DO' && dialect.name === 'postgresql') || (head === 'EXECUTE' && word(1) === 'IMMEDIATE')) dynamic = true;
  else if ((head === 'EXEC' || head === 'EXECUTE') && dialect.name === 'transactsql') {
    const next = tokens.kind(st.first + 1);
    dynamic = next === 'open' || next === 'string';
    for (let k = st.first; k < st.end && !dynamic; k++) if (tokens.kinds[k] === WORD && tokens.text(k).endsWith('SP_EXECUTESQL')) dynamic = true;
    call = !dynamic;
  } else if (head === 'CALL' || head === 'EXECUTE' || head === 'EXEC') call = true;
  else if (head === 'CREATE' || head === 'ALTER') {
    for (let k = 1; k < 12 && st.first + k < st.end; k++) {
      if (STORED_CODE.has(word(k))) body = true;
      if (word(k) === 'TABLE' || word(k) === 'VIEW' || word(k) === 'INDEX') break;
    }
  }
  if (dynamic) {
    throw refused(positions, { start: tokens.starts[st.first] }, 'the statement carries SQL text (dynamic SQL) that the server runs but the gateway cannot read; values in it cannot be protected');
  }
  if (body && hasLiteral(tokens, st, 'any')) {
    throw refused(positions, { start: tokens.starts[st.first] }, 'the statement carries a routine body that the server runs but the gateway cannot read; literals in it cannot be protected');
  }
  if (call && (hasLiteral(tokens, st, 'any') || hasVariable(tokens, st))) {
    throw refused(positions, { start: tokens.starts[st.first] }, 'the statement passes values to a routine or prepared statement, which puts them in columns the gateway cannot see; they cannot be protected');
  }
}

/** A session or script variable (`@n`, Snowflake's `$n`), not a system variable or a bound parameter. */
function hasVariable(tokens: SqlTokens, st: StatementTokens): boolean {
  for (let k = st.first; k < st.end; k++) {
    if (tokens.kinds[k] !== PARAM) continue;
    const text = tokens.text(k);
    if ((text.startsWith('@') && !text.startsWith('@@')) || /^\$[A-Za-z_]/.test(text)) return true;
  }
  return false;
}
