// The capture rules as text (what --dry-run prints and iptables-restore gets), the option checks,
// and the default ports from a config. No root needed: nothing is applied here (capture.test.ts
// applies them in a namespace).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { checkOptions, restoreInput, routePorts, type CaptureOptions } from '../../src/capture/rules.ts';
import { sharedTempDir } from '../helpers/netns.ts';

const base: CaptureOptions = { proxyUid: 10001, redirectPort: 15006, includePorts: [80, 443], excludePorts: [], excludeCidrs: [] };

describe('capture rules', () => {
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

  test('default ports: the ports routes name, plus 80 and 443 when a route names none', () => {
    assert.deepEqual(routePorts([]), [80, 443]);
    assert.deepEqual(routePorts([{ match: { port: 8443 } }, { match: { port: 9000 } }]), [8443, 9000]);
    assert.deepEqual(routePorts([{ match: { port: 8443 } }, { match: {} }]), [80, 443, 8443]);
  });
});

describe('dpg capture (process, --dry-run and refusals)', () => {
  const dpg = (args: string[], env: Record<string, string> = {}) => {
    const r = spawnSync(process.execPath, ['bin/dpg.js', 'capture', ...args], { encoding: 'utf8', env: { ...process.env, DPG_CONFIG: '', ...env }, timeout: 30_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  test('--dry-run prints the restore input and the jumps, changes nothing', () => {
    const r = dpg(['--dry-run', '--exclude-cidrs', '169.254.169.254/32']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /# IPv4\n.*-restore --noflush <<'EOF'\n\*nat\n:DPG_OUTPUT - \[0:0\]/);
    assert.match(r.stdout, /-A DPG_OUTPUT -d 169\.254\.169\.254\/32 -j RETURN/);
    assert.match(r.stdout, /-t nat -C OUTPUT -p tcp -j DPG_OUTPUT \|\| .* -t nat -I OUTPUT 1 -p tcp -j DPG_OUTPUT/);
  });

  test('the ports and the redirect port come from the config when one is given', () => {
    const dir = sharedTempDir('dpg-capture-cfg-');
    const config = join(dir, 'gateway.yaml');
    writeFileSync(
      config,
      `manifests: ${join(process.cwd(), 'config/manifests')}
proxy:
  routes:
    - name: r
      match: { host: api.partner.test, port: 8443 }
      request: { manifest: customer, jobType: Mask }
  transparent: { listen: "127.0.0.1:15099" }
`,
    );
    const r = dpg(['--dry-run', '--config', config]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /--dports 8443 -j REDIRECT --to-ports 15099/);
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
    for (const flag of ['--proxy-uid', '--app-uid', '--redirect-port', '--include-ports', '--exclude-ports', '--exclude-cidrs', '--backend', '--config', '--dry-run', '--remove']) assert.ok(r.stdout.includes(flag), flag);
  });
});
