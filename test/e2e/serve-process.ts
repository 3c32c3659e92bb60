// A real `dpg serve` process for whole-door tests: the default config with every listener on port 0,
// the default manifests, and the caller's proxy routes; the ports each listener took are read from
// its log, and every log line is kept so tests can check that nothing personal reached the logs.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ServeProcess {
  readonly dir: string;
  readonly configFile: string;
  /** Listener ports by name: http, grpc, proxy, proxy-reverse. */
  readonly ports: Readonly<Record<string, number>>;
  /** Every line the process wrote to stdout (its JSON log), in order. */
  readonly logs: readonly string[];
  readonly base: string;
  /** The process itself (tests that pause its stdout, or wait for its exit code). */
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `dpg serve` from the built bin with config/gateway.yaml, listeners on 127.0.0.1:0.
 * `proxy`: YAML for the `routes:` and `reverse:` lists (indented under `proxy:`), or nothing.
 */
export async function startServe(
  prefix: string,
  proxy?: { routes: string; reverse: string },
  editConfig: (yaml: string) => string = (yaml) => yaml,
): Promise<ServeProcess> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let config = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8')
    .replace('listen: 127.0.0.1:8080', 'listen: 127.0.0.1:0')
    .replace('listen: 127.0.0.1:9090', 'listen: 127.0.0.1:0')
    .replace('listen: 127.0.0.1:15001', 'listen: 127.0.0.1:0')
    .replace('manifests: manifests', `manifests: ${join(ROOT, 'config/manifests')}`);
  if (proxy !== undefined) {
    config = config.replace('routes: []                      # see docs/proxy.md\n  reverse: []', `routes:\n${proxy.routes}\n  reverse:\n${proxy.reverse}`);
  }
  const configFile = join(dir, 'gateway.yaml');
  writeFileSync(configFile, editConfig(config));
  const child = spawn(process.execPath, ['bin/dpg.js', 'serve', '--config', configFile], {
    cwd: ROOT,
    env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), DPG_LOG_LEVEL: 'info', NODE_ENV: 'test' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ports: Record<string, number> = {};
  const logs: string[] = [];
  await waitForReady(child, ports, logs);
  return {
    dir,
    configFile,
    ports,
    logs,
    base: `http://127.0.0.1:${ports.http}`,
    child,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function waitForReady(child: ChildProcess, ports: Record<string, number>, logs: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error('dpg serve did not become ready')), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        logs.push(line);
        let entry: { msg?: string; listener?: string; door?: string; port?: number };
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        const name = entry.listener ?? entry.door;
        if (name !== undefined && typeof entry.port === 'number') ports[name] = entry.port;
        if (entry.msg === 'ready') {
          clearTimeout(timer);
          resolve();
        }
      }
    });
    child.on('exit', (code) => reject(new Error(`dpg serve exited with ${code}`)));
  });
}

/** What the recording upstream received, one entry per request. */
export interface ReceivedRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface RecordingUpstream {
  readonly port: number;
  /** Requests in arrival order; tests empty it (`length = 0`) between cases. */
  readonly received: ReceivedRequest[];
  close(): Promise<void>;
}

/** A loopback HTTP server that answers 200 `ok` and keeps every request it received. */
export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const received: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
