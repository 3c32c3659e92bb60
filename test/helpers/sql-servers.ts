// Real SQL readers for tests: the sqlite3 shell (Debian's sqlite3) and a throwaway PostgreSQL server
// (Debian's postgresql) in a temporary directory, reached through a Unix socket there only (no TCP
// port). Each says why it is unavailable instead of failing, so tests can print one skip line.

import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SQLITE_MISSING = 'sqlite3 is not installed (Debian package sqlite3; .ci/run installs it)';

/** Runs a script in a fresh in-memory SQLite database; returns stdout, or throws with stderr. */
export function sqlite(script: string): string {
  const r = spawnSync('sqlite3', ['-batch', '-bail', ':memory:'], { input: script, encoding: 'utf8' });
  if (r.error !== undefined) throw r.error;
  if (r.status !== 0) throw new Error(`sqlite3 failed: ${r.stderr}`);
  return r.stdout;
}

export function sqliteAvailable(): boolean {
  const r = spawnSync('sqlite3', ['-version'], { encoding: 'utf8' });
  return r.error === undefined && r.status === 0;
}

export interface Postgres {
  /**
   * Runs SQL through psql; returns the rows, each row's fields joined by `|`, rows separated by NUL.
   * With `keepGoing`, an error does not stop the script (each case handles its own transaction).
   */
  psql(sql: string, keepGoing?: boolean): { ok: true; out: string } | { ok: false; err: string };
  close(): void;
}

function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin');
  return undefined;
}

/** Starts a PostgreSQL server of its own, or returns why it cannot (for the test's skip line). */
export function startPostgres(): Postgres | string {
  try {
    return start();
  } catch (err) {
    return `PostgreSQL could not be started (${err instanceof Error ? err.message : String(err)})`;
  }
}

function idOf(flag: '-u' | '-g', user: string): number {
  const r = spawnSync('id', [flag, user], { encoding: 'utf8' });
  if (r.status !== 0 || r.stdout === null) throw new Error(`no ${user} user`);
  return Number(r.stdout.trim());
}

function start(): Postgres | string {
  const bin = postgresBin();
  if (bin === undefined) return 'PostgreSQL is not installed (Debian package postgresql; .ci/run installs it)';
  const psqlBin = existsSync('/usr/bin/psql') ? '/usr/bin/psql' : join(bin, 'psql');
  // initdb refuses to run as root: run the server as the postgres user then, in a directory it owns.
  const root = process.getuid?.() === 0;
  const user = root ? 'postgres' : undefined;
  if (root && spawnSync('id', ['-u', 'postgres']).status !== 0) return 'running as root and there is no postgres user to run PostgreSQL as';
  const owner = root ? [idOf('-u', 'postgres'), idOf('-g', 'postgres')] : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'dpg-pg-'));
  if (owner !== undefined) chownSync(dir, owner[0], owner[1]);
  const as = (cmd: string, args: string[]) => (user === undefined ? spawnSync(cmd, args, { encoding: 'utf8' }) : spawnSync('runuser', ['-u', user, '--', cmd, ...args], { encoding: 'utf8' }));
  const data = join(dir, 'data');
  const init = as(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8']);
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return `initdb failed: ${(init.stderr ?? String(init.error)).trim().split('\n').pop()}`;
  }
  const options = `-k ${dir} -c listen_addresses='' -c fsync=off -c full_page_writes=off`;
  const started = as(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-w', '-t', '30', '-l', join(dir, 'log'), 'start']);
  if (started.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return `the PostgreSQL server did not start: ${(started.stderr ?? String(started.error)).trim().split('\n').pop()}`;
  }
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    as(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    rmSync(dir, { recursive: true, force: true });
  };
  // A test run that ends without `close` (a crash, a timeout) must not leave a server behind.
  process.once('exit', stop);
  return {
    psql(sql, keepGoing = false) {
      const r = spawnSync(psqlBin, ['-h', dir, '-U', 'postgres', '-X', '-q', '-A', '-t', '-0', '-v', `ON_ERROR_STOP=${keepGoing ? 0 : 1}`, '-d', 'postgres'], {
        input: sql,
        encoding: 'utf8',
      });
      if (r.status !== 0) return { ok: false, err: r.stderr };
      return { ok: true, out: r.stdout };
    },
    close() {
      process.removeListener('exit', stop);
      stop();
    },
  };
}
