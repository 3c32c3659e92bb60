// The hand-written X.509 encoder: Node's X509Certificate, node:tls and openssl (when installed)
// must all accept what it writes; the CA is generated once, reloaded, and configured CAs load.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { connect, TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { CA_CERT_FILE, CA_KEY_FILE, LeafCertificates, loadOrCreateCa, randomSerial } from '../../src/proxy/ca.ts';
import { namedBits, oid, readElement, smallInteger, unsignedInteger } from '../../src/proxy/der.ts';
import { createCertificate, encodeName, ipv6Bytes, issuerIdentity } from '../../src/proxy/x509.ts';
import { tempDir } from './helpers.ts';

const run = promisify(execFile);
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

test('DER primitives', () => {
  assert.equal(hex(oid('1.2.840.10045.4.3.2')), '06082a8648ce3d040302');
  assert.equal(hex(smallInteger(0)), '020100');
  assert.equal(hex(smallInteger(128)), '02020080');
  assert.equal(hex(unsignedInteger(Uint8Array.of(0, 0, 1))), '020101');
  assert.equal(hex(namedBits([0, 5, 6])), '03020186'); // keyCertSign|cRLSign|digitalSignature, 1 unused bit
  assert.equal(hex(namedBits([0])), '03020780');
  const long = new Uint8Array(300);
  const el = readElement(Uint8Array.from([0x04, 0x82, 0x01, 0x2c, ...long]));
  assert.equal(el.content.length, 300);
});

test('IPv6 addresses encode to 16 bytes', () => {
  assert.equal(hex(ipv6Bytes('::1')), '00000000000000000000000000000001');
  assert.equal(hex(ipv6Bytes('2001:db8::8:800:200c:417a')), '20010db8000000000008080020 0c417a'.replace(' ', ''));
  assert.equal(hex(ipv6Bytes('::ffff:192.0.2.1')), '00000000000000000000ffffc0000201');
});

test('generated CA: written once with a 0600 key, reloaded on the next start', () => {
  const dir = tempDir();
  const ca = loadOrCreateCa(undefined, dir);
  assert.equal(ca.source, 'generated');
  assert.equal(statSync(join(dir, CA_KEY_FILE)).mode & 0o777, 0o600);
  const x = new X509Certificate(ca.certPem);
  assert.ok(x.ca);
  assert.ok(x.verify(x.publicKey));
  const again = loadOrCreateCa(undefined, dir);
  assert.equal(again.source, 'data-dir');
  assert.equal(again.certPem, readFileSync(join(dir, CA_CERT_FILE), 'utf8'));
});

test('leaf: X509Certificate accepts it, checkIssued and verify pass, SANs are DNS and IP', () => {
  const ca = loadOrCreateCa(undefined, tempDir());
  const caCert = new X509Certificate(ca.certPem);
  const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const leaf = createCertificate({
    subject: encodeName('api.partner.example'),
    publicKey: keys.publicKey,
    issuer: ca.issuer,
    notBefore: new Date(Date.now() - 1000),
    notAfter: new Date(Date.now() + 86400_000),
    isCa: false,
    altNames: ['api.partner.example', '10.1.2.3', '::1'],
    serial: randomSerial(),
  });
  const x = new X509Certificate(leaf.pem);
  assert.equal(x.subjectAltName, 'DNS:api.partner.example, IP Address:10.1.2.3, IP Address:0:0:0:0:0:0:0:1');
  assert.ok(x.checkIssued(caCert));
  assert.ok(x.verify(caCert.publicKey));
  assert.equal(x.ca, false);
  assert.ok(x.checkHost('api.partner.example'));
  assert.ok(x.checkIP('10.1.2.3'));
  assert.equal(x.keyUsage?.includes('1.3.6.1.5.5.7.3.1'), true);
});

test('node:tls completes a handshake against a minted leaf (DNS name and IP)', async () => {
  const ca = loadOrCreateCa(undefined, tempDir());
  const leaves = new LeafCertificates(ca);
  for (const host of ['localhost', '127.0.0.1']) {
    const server = createServer((socket) => {
      const t = new TLSSocket(socket, { isServer: true, secureContext: leaves.contextFor(host) });
      t.on('error', () => undefined);
      t.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const text = await new Promise<string>((resolve, reject) => {
      const c = connect({ host: '127.0.0.1', port, ca: ca.certPem, servername: host === 'localhost' ? host : undefined });
      let data = '';
      c.on('data', (d: Buffer) => (data += d.toString()));
      c.on('end', () => resolve(data));
      c.on('error', reject);
    });
    assert.equal(text, 'ok');
    server.close();
  }
  assert.equal(leaves.size, 2);
});

test('leaf cache keeps at most maxEntries hosts, least recently used out first', () => {
  const leaves = new LeafCertificates(loadOrCreateCa(undefined, tempDir()), { maxEntries: 2 });
  const a = leaves.contextFor('a.test');
  leaves.contextFor('b.test');
  assert.equal(leaves.contextFor('a.test'), a); // hit, now most recent
  leaves.contextFor('c.test'); // evicts b
  assert.equal(leaves.size, 2);
  assert.equal(leaves.contextFor('a.test'), a);
});

test('openssl parses and verifies the CA and a leaf', async (t) => {
  try {
    await run('openssl', ['version']);
  } catch {
    t.skip('openssl is not installed');
    return;
  }
  const dir = tempDir();
  const ca = loadOrCreateCa(undefined, dir);
  const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const leaf = createCertificate({
    subject: encodeName('x.test'),
    publicKey: keys.publicKey,
    issuer: ca.issuer,
    notBefore: new Date(Date.now() - 1000),
    notAfter: new Date(Date.now() + 86400_000),
    isCa: false,
    altNames: ['x.test', '192.0.2.7'],
    serial: randomSerial(),
  });
  writeFileSync(join(dir, 'leaf.pem'), leaf.pem);
  const text = (await run('openssl', ['x509', '-in', join(dir, 'leaf.pem'), '-noout', '-text'])).stdout;
  assert.match(text, /DNS:x\.test, IP Address:192\.0\.2\.7/);
  assert.match(text, /TLS Web Server Authentication/);
  const verified = await run('openssl', ['verify', '-CAfile', join(dir, CA_CERT_FILE), join(dir, 'leaf.pem')]);
  assert.match(verified.stdout, /OK/);
});

test('a configured RSA CA (made by openssl) is loaded and signs verifiable leaves', async (t) => {
  try {
    await run('openssl', ['version']);
  } catch {
    t.skip('openssl is not installed');
    return;
  }
  const dir = tempDir();
  await run('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'ca-key.pem'), '-out', join(dir, 'ca.pem'),
    '-subj', '/CN=Configured Test CA', '-days', '2',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const ca = loadOrCreateCa({ cert: join(dir, 'ca.pem'), key: join(dir, 'ca-key.pem') }, tempDir());
  assert.equal(ca.source, 'config');
  const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const leaf = createCertificate({
    subject: encodeName('y.test'),
    publicKey: keys.publicKey,
    issuer: ca.issuer,
    notBefore: new Date(Date.now() - 1000),
    notAfter: new Date(Date.now() + 86400_000),
    isCa: false,
    altNames: ['y.test'],
    serial: randomSerial(),
  });
  const caCert = new X509Certificate(ca.certPem);
  assert.ok(new X509Certificate(leaf.pem).verify(caCert.publicKey));
  writeFileSync(join(dir, 'leaf.pem'), leaf.pem);
  assert.match((await run('openssl', ['verify', '-CAfile', join(dir, 'ca.pem'), join(dir, 'leaf.pem')])).stdout, /OK/);
  // The issuer name is copied byte for byte from the configured CA.
  assert.equal(hex(issuerIdentity(new Uint8Array(caCert.raw)).name), hex(ca.issuer.name));
  // A key that does not belong to the certificate is refused, without quoting it.
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
  writeFileSync(join(dir, 'other-key.pem'), other);
  assert.throws(() => loadOrCreateCa({ cert: join(dir, 'ca.pem'), key: join(dir, 'other-key.pem') }, tempDir()), /does not belong/);
});
