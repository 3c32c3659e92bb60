// The capture rules as text (what --dry-run prints and iptables-restore gets), the option checks,
// and the default ports from a config. No root needed: nothing is applied here (capture.test.ts
// applies them in a namespace).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { checkOptions, restoreInput, routePorts, type CaptureOptions } from '../../src/capture/rules.ts';
import { sharedTempDir } from '../helpers/netns.ts';

const base: CaptureOptions = { proxyUid: 10001, redirectPort: 15006, includePorts: [80, 443], excludePorts: [], excludeCidrs: [] };

describe('capture rules', () => {
  test('a service mesh proxy UID (--exclude-uids) returns right after the gateway UID in both tables; 0 and the app UID are refused', () => {
    const text = restoreInput({ ...base, excludeUids: [1337, 1337, 10001] }, 4);
    const lines = text.split('\n');
    for (const table of ['*nat', '*filter']) {
      const at = lines.indexOf(table);
      assert.deepEqual(lines.slice(at + 2, at + 5), [
        '-A DPG_OUTPUT -m owner --uid-owner 10001 -j RETURN',
        '-A DPG_OUTPUT -m owner --uid-owner 1337 -j RETURN',
        '-A DPG_OUTPUT -d 127.0.0.0/8 -j RETURN',
      ]);
    }
    assert.deepEqual(checkOptions({ ...base, excludeUids: [1337, 2102] }), []);
    assert.match(checkOptions({ ...base, excludeUids: [0] }).join('\n'), /--exclude-uids 0 is refused/);
    assert.match(checkOptions({ ...base, appUid: 10002, excludeUids: [10002] }).join('\n'), /--exclude-uids 10002 is the app's UID/);
  });

  test('IPv4: exemptions first (UID, loopback by destination, CIDRs), then the redirect; UDP to the same ports rejected', () => {
    const text = restoreInput({ ...base, excludeCidrs: ['10.0.0.0/8', 'fd00::/8'], excludePorts: [443] , includePorts: [80, 443, 8080] }, 4);
    assert.equal(
      text,
      [
        '*nat',
        ':DPG_OUTPUT - [0:0]',
        '-A DPG_OUTPUT -m owner --uid-owner 10001 -j RETURN',
        '-A DPG_OUTPUT -d 127.0.0.0/8 -j RETURN',
        '-A DPG_OUTPUT -d 10.0.0.0/8 -j RETURN',
        '-A DPG_OUTPUT -p tcp -m multiport --dports 80,8080 -j REDIRECT --to-ports 15006',
        'COMMIT',
        '*filter',
        ':DPG_OUTPUT - [0:0]',
        '-A DPG_OUTPUT -m owner --uid-owner 10001 -j RETURN',
        '-A DPG_OUTPUT -d 127.0.0.0/8 -j RETURN',
        '-A DPG_OUTPUT -d 10.0.0.0/8 -j RETURN',
        '-A DPG_OUTPUT -p udp -m multiport --dports 80,8080 -j REJECT --reject-with icmp-port-unreachable',
        'COMMIT',
        '',
      ].join('\n'),
    );
    assert.doesNotMatch(text, /-o lo/, 'loopback is exempt by destination, never by interface');
  });

  test('IPv6 has its own loopback and only the IPv6 CIDRs', () => {
    const text = restoreInput({ ...base, excludeCidrs: ['10.0.0.0/8', 'fd00::/8'] }, 6);
    assert.match(text, /-A DPG_OUTPUT -d ::1\/128 -j RETURN/);
    assert.match(text, /-A DPG_OUTPUT -d fd00::\/8 -j RETURN/);
    assert.doesNotMatch(text, /10\.0\.0\.0/);
    assert.match(text, /icmp6-port-unreachable/);
  });

  test('* captures every TCP port but the excluded ones; UDP 443 only (DNS must keep working)', () => {
    const text = restoreInput({ ...base, includePorts: '*', excludePorts: [22, 5432] }, 4);
    assert.match(text, /-A DPG_OUTPUT -p tcp -m multiport --dports 22,5432 -j RETURN\n-A DPG_OUTPUT -p tcp -j REDIRECT --to-ports 15006/);
    assert.match(text, /-A DPG_OUTPUT -p udp --dport 443 -j REJECT/);
  });

  test('more than 15 ports are split over several multiport rules', () => {
    const ports = Array.from({ length: 20 }, (_, i) => 9000 + i);
    const text = restoreInput({ ...base, includePorts: ports }, 4);
    assert.equal((text.match(/-j REDIRECT/g) ?? []).length, 2);
  });

  test('refused options', () => {
    const problems = (o: Partial<CaptureOptions>) => checkOptions({ ...base, ...o }).join('\n');
    assert.match(problems({ proxyUid: 0 }), /--proxy-uid 0 is refused/);
    assert.match(problems({ appUid: 10001 }), /is the gateway's UID/);
    assert.match(problems({ excludeCidrs: ['10.0.0.0/33'] }), /not an IPv4 or IPv6 CIDR/);
    assert.match(problems({ excludeCidrs: ['example.com/8'] }), /not an IPv4 or IPv6 CIDR/);
    assert.match(problems({ includePorts: [443], excludePorts: [443] }), /no port is left/);
    assert.match(problems({ redirectPort: 70000 }), /--redirect-port/);
    assert.equal(problems({ appUid: 10002 }), '');
  });

  test('default ports: the ports routes name; every port when a route names none (it matches every port); 80,443 without routes', () => {
    assert.deepEqual(routePorts([]), [80, 443]);
    assert.deepEqual(routePorts([{ match: { port: 8443 } }, { match: { port: 9000 } }, { match: { port: 8443 } }]), [8443, 9000]);
    assert.equal(routePorts([{ match: { port: 8443 } }, { match: {} }]), '*');
    assert.equal(routePorts([{ name: 'no-match' }]), '*');
  });
});

describe('dpg capture (process, --dry-run and refusals)', () => {
  const BIN = join(process.cwd(), 'bin/dpg.js');
  const dpg = (args: string[], env: Record<string, string> = {}, cwd = process.cwd()) => {
    const r = spawnSync(process.execPath, [BIN, 'capture', ...args], { encoding: 'utf8', env: { ...process.env, DPG_CONFIG: '', ...env }, timeout: 180_000, cwd });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  test('--dry-run prints the restore input and the jumps, changes nothing', () => {
    const r = dpg(['--dry-run', '--exclude-cidrs', '169.254.169.254/32']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /# IPv4\n.*-restore --noflush <<'EOF'\n\*nat\n:DPG_OUTPUT - \[0:0\]/);
    assert.match(r.stdout, /-A DPG_OUTPUT -d 169\.254\.169\.254\/32 -j RETURN/);
    assert.match(r.stdout, /-t nat -C OUTPUT -p tcp -j DPG_OUTPUT \|\| .* -t nat -I OUTPUT 1 -p tcp -j DPG_OUTPUT/);
  });

  test('--backend legacy: the same rules, given to the legacy tools (iptables-legacy-restore, iptables-legacy)', () => {
    const nft = dpg(['--dry-run']);
    const legacy = dpg(['--dry-run', '--backend', 'legacy']);
    assert.equal(nft.code, 0, nft.stderr);
    assert.equal(legacy.code, 0, legacy.stderr);
    // The tools are named by the backend: found on this machine (Debian's iptables package ships
    // both iptables-nft and iptables-legacy), or placeholder names when they are missing. Only where
    // iptables-legacy is absent may a plain `iptables` that is the legacy one be named instead.
    const noLegacySuffix = spawnSync('iptables-legacy', ['--version'], { stdio: 'ignore' }).error !== undefined;
    const tool = (base: string): string => `(?:\\S*/)?${base}${noLegacySuffix ? '(?:-legacy)?' : '-legacy'}`;
    const v4 = tool('iptables');
    assert.match(legacy.stdout, new RegExp(`^# IPv4\\n${v4}-restore --noflush <<'EOF'$`, 'm'));
    assert.match(legacy.stdout, new RegExp(`^${v4} -t nat -C OUTPUT -p tcp -j DPG_OUTPUT \\|\\| ${v4} -t nat -I OUTPUT 1 -p tcp -j DPG_OUTPUT$`, 'm'));
    assert.match(legacy.stdout, new RegExp(`^${v4} -t filter -C OUTPUT -p udp -j DPG_OUTPUT \\|\\| ${v4} -t filter -I OUTPUT 1 -p udp -j DPG_OUTPUT$`, 'm'));
    if (legacy.stdout.includes('# IPv6')) assert.match(legacy.stdout, new RegExp(`^# IPv6\\n${tool('ip6tables')}-restore --noflush <<'EOF'$`, 'm'));
    assert.doesNotMatch(legacy.stdout, /-nft/, 'no nf_tables tool is named');
    assert.match(nft.stdout, /iptables-nft-restore|iptables-restore/);
    // Only the tools differ: the restore input is the same text for both backends.
    const inputs = (text: string): string[] => [...text.matchAll(/<<'EOF'\n([\s\S]*?)\nEOF/g)].map((m) => m[1]);
    assert.ok(inputs(legacy.stdout).length >= 1);
    assert.deepEqual(inputs(legacy.stdout), inputs(nft.stdout));
  });

  /** A config file holding `proxy` (YAML, indented under it); returns its path. */
  const configWith = (proxy: string): string => {
    const config = join(sharedTempDir('dpg-capture-cfg-'), 'gateway.yaml');
    writeFileSync(config, `manifests: ${join(process.cwd(), 'config/manifests')}\nproxy:\n${proxy}`);
    return config;
  };

  test('the ports and the redirect port come from the config when one is given', () => {
    const config = configWith(`  routes:
    - name: r
      match: { host: api.partner.test, port: 8443 }
      request: { manifest: customer, jobType: Mask }
  transparent: { listen: "127.0.0.1:15099" }
`);
    const r = dpg(['--dry-run', '--config', config]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /--dports 8443 -j REDIRECT --to-ports 15099/);
  });

  test('review finding 8: a route without a port captures every TCP port by default, with a warning; narrowing it warns that the rest goes direct', () => {
    const config = configWith(`  routes:
    - name: partner
      match: { host: "*.partner.test", path: "/v1/customers/**" }
      request: { manifest: customer, jobType: Mask }
    - name: ported
      match: { host: api.other.test, port: 8443 }
      request: { manifest: customer, jobType: Mask }
`);
    const r = dpg(['--dry-run', '--config', config]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /-A DPG_OUTPUT -p tcp -j REDIRECT --to-ports 15006/, 'every TCP port is redirected');
    assert.doesNotMatch(r.stdout, /--dports 80,443 -j REDIRECT/);
    assert.match(r.stderr, /warning: route partner names no port, so it matches every port: dpg capture redirects every TCP port/);
    // Issue 16 class 10: narrowing the capture of a route that matches every port is refused, not warned about.
    const narrowed = dpg(['--dry-run', '--config', config, '--include-ports', '80,443']);
    assert.equal(narrowed.code, 1, narrowed.stderr);
    assert.match(narrowed.stderr, /route partner names no port, so it matches every port, but only TCP 80,443 would be captured/);
    assert.match(narrowed.stderr, /nothing was installed/);
    assert.doesNotMatch(narrowed.stdout, /\*nat/, 'no rule is printed');
    const excluded = dpg(['--dry-run', '--config', config, '--exclude-ports', '5432']);
    assert.equal(excluded.code, 1, excluded.stderr);
    assert.match(excluded.stderr, /route partner names no port, so it matches every port, but TCP 5432 would be excluded/);
    assert.equal(dpg(['--dry-run', '--config', config, '--include-ports', '*']).stderr, '', 'capturing every port needs no warning');

    const validate = spawnSync(process.execPath, ['bin/dpg.js', 'validate', '--config', config], {
      encoding: 'utf8',
      env: { ...process.env, DPG_CONFIG: '', DPG_DATA_DIR: join(config, '..', 'data'), DPG_LOG_LEVEL: 'silent' },
      timeout: 180_000,
    });
    assert.equal(validate.status, 0, validate.stderr);
    assert.match(validate.stdout, /warning: proxy: route partner names no port, so it matches every port: dpg capture redirects every TCP port/);
  });

  /** A directory holding config/gateway.yaml with one route on `port` (what the README recipe edits). */
  const cloneWithRoute = (port: number): string => {
    const dir = sharedTempDir('dpg-capture-clone-');
    mkdirSync(join(dir, 'config'));
    writeFileSync(
      join(dir, 'config', 'gateway.yaml'),
      `manifests: ${join(process.cwd(), 'config/manifests')}\nproxy:\n  routes:\n    - name: partner\n      match: { host: api.partner.test, port: ${port}, path: "/v1/customers/**" }\n      request: { manifest: customer, jobType: Mask }\n`,
    );
    return dir;
  };

  test('issue 16 class 10: without --config, capture reads what dpg serve reads (DPG_CONFIG, else config/gateway.yaml) and prints the routes and the captured ports', () => {
    const clone = cloneWithRoute(8443);
    const r = dpg(['--dry-run', '--proxy-uid', '10001'], {}, clone);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# routes \(config\/gateway\.yaml\): partner 8443$/m);
    assert.match(r.stdout, /^# captured: TCP 8443 \(the ports routes name\)$/m);
    assert.match(r.stdout, /-p tcp -m multiport --dports 8443 -j REDIRECT --to-ports 15006/);
    assert.doesNotMatch(r.stdout, /--dports 80,443/);

    const viaEnv = dpg(['--dry-run'], { DPG_CONFIG: join(clone, 'config', 'gateway.yaml') });
    assert.equal(viaEnv.code, 0, viaEnv.stderr);
    assert.match(viaEnv.stdout, /--dports 8443 -j REDIRECT/);
    // --config wins over DPG_CONFIG, as for dpg serve.
    const other = cloneWithRoute(9443);
    const named = dpg(['--dry-run', '--config', join(other, 'config', 'gateway.yaml')], { DPG_CONFIG: join(clone, 'config', 'gateway.yaml') });
    assert.match(named.stdout, /--dports 9443 -j REDIRECT/);
  });

  test("issue 16 class 10: a route's port left out of the capture is refused: exit 1, the reason, no rule", () => {
    const clone = cloneWithRoute(8443);
    for (const args of [['--include-ports', '80,443'], ['--include-ports', '*', '--exclude-ports', '8443'], ['--include-ports', '443,8443', '--exclude-ports', '8443']]) {
      const r = dpg(['--dry-run', ...args], {}, clone);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /route partner is on port 8443, which (is not among the captured ports|--exclude-ports leaves out)/);
      assert.match(r.stderr, /go direct, in clear: nothing was installed/);
      assert.doesNotMatch(r.stdout, /REDIRECT/, 'no rule is printed');
    }
    // Capturing the route's port (with others, or every port) is fine.
    for (const args of [['--include-ports', '80,443,8443'], ['--include-ports', '*'], ['--include-ports', '*', '--exclude-ports', '5432']]) {
      const r = dpg(['--dry-run', ...args], {}, clone);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
  });

  test('issue 16 class 10: no config to read is refused (exit 1), never a guess at the ports', () => {
    const empty = sharedTempDir('dpg-capture-noconfig-');
    const r = dpg(['--dry-run'], {}, empty);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /reads the config dpg serve reads \(--config, else DPG_CONFIG, else config\/gateway\.yaml\)/);
    assert.doesNotMatch(r.stdout, /REDIRECT/);
  });

  test('refusals exit 1 with the reason; bad flags exit 2', () => {
    const zero = dpg(['--dry-run', '--proxy-uid', '0']);
    assert.equal(zero.code, 1);
    assert.match(zero.stderr, /--proxy-uid 0 is refused/);
    const same = dpg(['--dry-run', '--app-uid', '10001']);
    assert.equal(same.code, 1);
    assert.equal(dpg(['--include-ports', 'http']).code, 2);
    assert.equal(dpg(['--backend', 'ebpf']).code, 2);
  });

  test('--help describes the flags and the rules', () => {
    const r = dpg(['--help']);
    assert.equal(r.code, 0);
    for (const flag of ['--proxy-uid', '--app-uid', '--redirect-port', '--include-ports', '--exclude-ports', '--exclude-cidrs', '--exclude-uids', '--backend', '--config', '--dry-run', '--remove']) assert.ok(r.stdout.includes(flag), flag);
  });
});
