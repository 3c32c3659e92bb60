// `dpg serve` as a process with a config and environment of the test's choosing (NODE_ENV, key
// source, admin listener): its JSON log kept line by line, listener ports read from it.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './serve-process.ts';

export const BIN = join(ROOT, 'bin/dpg.js');
export const MANIFESTS = join(ROOT, 'config/manifests');

/** The environment of a child: this process's, without NODE_ENV and DPG_* (the test says what it wants). */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (k !== 'NODE_ENV' && !k.startsWith('DPG_')) base[k] = v;
  return { ...base, DPG_LOG_LEVEL: 'info', ...env };
}

/** `dpg <args>` to completion. */
export function dpgSync(args: string[], env: Record<string, string>): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', cwd: ROOT, env: childEnv(env), timeout: 180_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A keyring document with one version per given material (base64), key `default`. */
export function keyringDocument(keys: readonly { id: string; materials: readonly string[] }[], defaultKey?: string): string {
  let doc = defaultKey ? `defaultKey: ${defaultKey}\nkeys:\n` : 'keys:\n';
  for (const k of keys) {
    doc += `  - id: ${k.id}\n    versions:\n`;
    k.materials.forEach((m, i) => (doc += `      - { version: ${i + 1}, activeFrom: "${2020 + i}-01-01T00:00:00Z", material: "${m}" }\n`));
  }
  return doc;
}

export function writeKeyFile(path: string, doc: string): string {
  writeFileSync(path, doc, { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
}

export interface GatewayProcess {
  readonly child: ChildProcess;
  readonly logs: string[];
  readonly stderr: () => string;
  readonly ports: Record<string, number>;
  /** Resolves with the exit code; SIGTERM first when still running. */
  stop(): Promise<number | null>;
}

/** Starts `dpg serve -c config`; resolves once it logs `ready`, rejects (with its stderr) when it exits first. */
export function startGateway(config: string, env: Record<string, string>): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', '-c', config], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const ports: Record<string, number> = {};
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const process_: GatewayProcess = {
    child,
    logs,
    ports,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`dpg serve did not become ready:\n${err}`));
    }, 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        logs.push(line);
        let entry: { msg?: string; listener?: string; door?: string; port?: number };
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        // The gRPC door names itself `door`, the others `listener`.
        const name = entry.listener ?? entry.door;
        if (name !== undefined && typeof entry.port === 'number') ports[name] = entry.port;
        if (entry.msg === 'ready') {
          clearTimeout(timer);
          resolve(process_);
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`dpg serve exited ${code}:\n${err}`), { code, stderr: err }));
    });
  });
}
