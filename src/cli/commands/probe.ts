// `dpg probe ready|live`: asks the running gateway of a config whether it is ready or alive, for
// exec probes (Kubernetes) and the image's HEALTHCHECK. Exit 0 yes, 1 no. It asks the admin
// listener's /readyz or /healthz when the config has one (the sidecar profile), else the HTTP
// API's, else the egress proxy listener's (which answers the same paths in origin form).

import { request } from 'node:http';
import { ConfigError } from '../../core/errors.ts';
import type { GatewayConfig, ListenAddress } from '../../config/types.ts';
import { integerFlag, parseFlags, UsageError, type Command, type FlagSpec } from '../command.ts';
import { proxyHealthSocket } from '../../core/health-socket.ts';

const options = {
  config: { type: 'string', short: 'c', value: 'FILE', help: 'config of the gateway to ask (default DPG_CONFIG, else config/gateway.yaml)' },
  timeout: { type: 'string', value: 'MS', help: 'give up after this many milliseconds (default 2000)' },
  wait: { type: 'string', short: 'w', value: 'SECONDS', help: 'keep asking (every 250 ms) until the answer is yes or SECONDS have passed' },
  quiet: { type: 'boolean', short: 'q', help: 'print nothing, only the exit code' },
} satisfies FlagSpec;

/**
 * Where the probe asks: the admin listener when it is on, else the HTTP API, else the egress proxy;
 * with its forward listener off (DPG_PROXY_ADDR=off), the proxy's health socket in the data directory.
 */
export function probeTarget(config: GatewayConfig): { listener: string; address: ListenAddress; socketPath?: string } | undefined {
  // The admin port serves nothing else, so a busy API or proxy never delays its answer's socket.
  if (config.admin) return { listener: 'admin listener', address: config.admin.listen };
  if (config.http.enabled !== false) return { listener: 'HTTP API', address: config.http.listen };
  if (config.proxy.enabled && config.proxy.forward === 'off') {
    const socketPath = proxyHealthSocket(config.dataDir);
    return { listener: 'egress proxy (forward listener off)', address: { host: socketPath, port: 0 }, socketPath };
  }
  if (config.proxy.enabled) return { listener: 'egress proxy', address: config.proxy.listen };
  return undefined;
}

/** A wildcard listen address is reached through loopback. */
function connectHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host.replace(/^\[|\]$/g, '');
}

function get(host: string, port: number, path: string, timeoutMs: number, socketPath?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const where = socketPath !== undefined ? { socketPath } : { host, port };
    const req = request({ ...where, path, method: 'GET', timeout: timeoutMs, agent: false, headers: { connection: 'close' } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end();
  });
}

export const probeCommand: Command = {
  name: 'probe',
  summary: 'exit 0 when the running gateway is ready (or alive), 1 otherwise',
  usage: `dpg probe ready|live [--config FILE] [--timeout MS] [--wait SECONDS]
    Asks the gateway started with the same config (and DPG_*_ADDR variables) whether it is
    ready (GET /readyz) or alive (GET /healthz). For Kubernetes exec probes and HEALTHCHECK.`,
  options,
  details: `It asks the admin listener (admin.listen, DPG_ADMIN_ADDR) when one is configured, as in
the sidecar profile; else the HTTP API's address; else (http.enabled: false, no admin listener) the
egress proxy's address, which answers the same two paths. A listener on port 0 cannot be probed.
--wait makes one command wait for start-up (a postStart hook, a script): it exits 0 at the first
yes and 1 when the time is up.`,
  async run(args, io) {
    const { values, positionals } = parseFlags(args, options);
    const kind = positionals[0];
    if (positionals.length !== 1 || (kind !== 'ready' && kind !== 'live')) throw new UsageError('probe takes one argument: ready or live');
    const timeoutMs = integerFlag(values.timeout, 'timeout', { min: 1, max: 600_000 }) ?? 2000;
    const waitSeconds = integerFlag(values.wait, 'wait', { min: 0, max: 3600 });
    const say = (line: string) => {
      if (!values.quiet) io.stdout.write(`${line}\n`);
    };
    const { loadConfig } = await import('../../config/load.ts');
    const { config, problems } = loadConfig({ file: values.config });
    if (!config) throw new ConfigError(problems);
    const target = probeTarget(config);
    if (!target) {
      io.stderr.write('dpg probe: this config has no admin listener and turns off both the HTTP API and the egress proxy: nothing to ask\n');
      return 1;
    }
    const { host, port } = target.address;
    if (port === 0 && target.socketPath === undefined) {
      io.stderr.write(`dpg probe: the ${target.listener} listens on port 0 (a free port chosen at start): set a fixed port to probe it\n`);
      return 1;
    }
    const path = kind === 'ready' ? '/readyz' : '/healthz';
    const where = target.socketPath !== undefined ? `${target.listener} ${target.socketPath}` : `${target.listener} ${host.includes(':') ? `[${host}]` : host}:${port}`;
    const deadline = waitSeconds === undefined ? 0 : Date.now() + waitSeconds * 1000;
    for (;;) {
      let answer: string;
      try {
        const status = await get(connectHost(host), port, path, timeoutMs, target.socketPath);
        if (status === 200) {
          say(`${kind}: ${where}`);
          return 0;
        }
        answer = `answered ${status}`;
      } catch (err) {
        answer = (err as NodeJS.ErrnoException).code ?? 'no answer';
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        say(`not ${kind}: ${where}: ${answer}`);
        return 1;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, left)));
    }
  },
};
