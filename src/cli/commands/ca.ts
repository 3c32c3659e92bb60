// `dpg ca bundle`: writes the trust files apps need for intercepted HTTPS (ca.crt, bundle.pem,
// truststore.p12) from the CA `dpg serve` uses with the same config and DPG_DATA_DIR.

import { ConfigError } from '../../core/errors.ts';
import { parseFlags, UsageError, type Command, type FlagSpec } from '../command.ts';

const options = {
  out: { type: 'string', short: 'o', value: 'DIR', help: 'directory to write ca.crt, bundle.pem and truststore.p12 into (created if needed)' },
  config: { type: 'string', short: 'c', value: 'FILE', help: 'gateway config (default DPG_CONFIG, else config/gateway.yaml)' },
  owner: { type: 'string', value: 'UID[:GID]', help: 'when the CA is generated now (running as root), give its files to this user (the gateway)' },
} satisfies FlagSpec;

const USAGE = `dpg ca bundle --out DIR [--config FILE] [--owner UID[:GID]]
    Writes the gateway CA (ca.crt), the system roots plus the CA (bundle.pem) and a PKCS#12 Java
    truststore (truststore.p12, password changeit) into DIR. The CA is the one dpg serve uses with
    the same config and DPG_DATA_DIR: proxy.ca when configured, else generated there on first use.`;

const DETAILS = `Per runtime (docs/transparent.md):
  Node.js              NODE_EXTRA_CA_CERTS=DIR/ca.crt
  Python, Go, OpenSSL  SSL_CERT_FILE=DIR/bundle.pem   (requests: REQUESTS_CA_BUNDLE=DIR/bundle.pem)
  curl                 CURL_CA_BUNDLE=DIR/bundle.pem
  Java                 -Djavax.net.ssl.trustStore=DIR/truststore.p12 -Djavax.net.ssl.trustStoreType=PKCS12
                       -Djavax.net.ssl.trustStorePassword=changeit   (e.g. in JAVA_TOOL_OPTIONS)`;

export const caCommand: Command = {
  name: 'ca',
  summary: 'write the gateway CA, a roots+CA bundle and a Java truststore for apps (dpg ca bundle)',
  usage: USAGE,
  options,
  details: DETAILS,
  async run(args, io) {
    const { values: v, positionals } = parseFlags(args, options);
    if (positionals[0] !== 'bundle' || positionals.length !== 1) throw new UsageError('usage: dpg ca bundle --out DIR [--config FILE]');
    const out = v.out as string | undefined;
    if (!out) throw new UsageError('--out DIR is required');
    let owner: { uid: number; gid: number } | undefined;
    if (v.owner !== undefined) {
      const m = /^(\d{1,10})(?::(\d{1,10}))?$/.exec(v.owner as string);
      if (!m) throw new UsageError('--owner must be UID or UID:GID (numbers)');
      owner = { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) };
    }

    const { loadConfig } = await import('../../config/load.ts');
    const { config, problems } = loadConfig({ file: v.config as string | undefined });
    if (!config) throw new ConfigError(problems);
    const { writeCaBundleFor } = await import('../../capture/ca-bundle.ts');
    await (await import('../../crypto/x509.ts')).loadX509(); // a CA made on the spot is built synchronously
    const result = writeCaBundleFor(config, out, owner);
    io.stdout.write(`${result.files.join('\n')}\n`);
    io.stdout.write(`gateway CA from ${result.caSource}; ${result.count} certificates in the bundle and the truststore (password changeit)\n`);
    for (const [source, n] of Object.entries(result.skipped)) io.stderr.write(`dpg ca bundle: ${n} unreadable certificate(s) skipped in ${source}\n`);
    return 0;
  },
};
