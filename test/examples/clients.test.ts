// examples/clients: the Node, Python and Java clients run against a real `dpg serve` (every
// listener on port 0), so the examples never rot. Each must finish cleanly and print exactly the
// protected answers below for its token, JSON, XML, SQL, CSV and gRPC calls (Java has no gRPC:
// see examples/clients/README.md). The three run at once, against one gateway.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, startServe, type ServeProcess } from '../e2e/serve-process.ts';

const EXPECTED = [
  'token ok',
  'json {"name":"J*** D**","cardNumber":"**** **** **** 1111"}',
  'xml <customer><name>J*** D**</name><cardNumber>**** **** **** 1111</cardNumber></customer>',
  "sql INSERT INTO customers (name, cardNumber) VALUES ('J*** D**', '**** **** **** 1111')",
  'csv name,cardNumber | J*** D**,**** **** **** 1111',
  'grpc J*** D**,**** **** **** 1111',
];

// Debian's python3 (/usr/bin) has python3-requests and python3-grpcio from apt; a pyenv or venv
// python on PATH may not.
const PYTHON = ['/usr/bin/python3', 'python3'].find((p) => spawnSync(p, ['-c', 'import requests, grpc'], { stdio: 'ignore' }).status === 0);
const JAVA = spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

let gw: ServeProcess;
const runs = new Map<string, Promise<Run>>();
before(async () => {
  gw = await startServe('dpg-clients-');
  const env = { ...process.env, DPG_URL: gw.base, DPG_GRPC: `127.0.0.1:${gw.ports.grpc}` };
  runs.set('node', run(process.execPath, [join('examples', 'clients', 'node', 'client.mjs')], env));
  if (PYTHON) runs.set('python', run(PYTHON, [join('examples', 'clients', 'python', 'client.py')], env));
  if (JAVA) runs.set('java', run('java', [join('examples', 'clients', 'java', 'Client.java')], env));
  await Promise.allSettled(runs.values());
});
after(async () => {
  await gw.stop();
});

async function check(name: string, expected: string[]): Promise<void> {
  const result = await runs.get(name)!;
  assert.equal(result.status, 0, `${name} client failed: ${result.stderr}`);
  assert.deepEqual(result.stdout.trimEnd().split('\n'), expected);
}

test('Node client (fetch, @grpc/grpc-js)', () => check('node', EXPECTED));

test('Python client (requests, grpcio)', { skip: PYTHON ? false : 'SKIPPED: python3 with requests and grpcio is not installed (apt-get install python3-requests python3-grpcio)' }, () =>
  check('python', EXPECTED));

test('Java 17 client (java.net.http; no gRPC)', { skip: JAVA ? false : 'SKIPPED: no java on PATH (apt-get install openjdk-17-jdk-headless)' }, () =>
  check('java', EXPECTED.filter((l) => !l.startsWith('grpc '))));

test('no client call left a value in the clear in the gateway log', () => {
  const log = gw.logs.join('\n');
  for (const value of ['4111 1111 1111 1111', 'Jane Doe', 'demo-secret']) assert.ok(!log.includes(value));
});
