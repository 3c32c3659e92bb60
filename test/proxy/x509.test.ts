// The certificates x509.ts builds (@peculiar/asn1-x509 structures, node:crypto signatures): Node's
// X509Certificate, node:tls and openssl (when installed) must all accept them; the CA is generated
// once, reloaded, and configured CAs load.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { connect, TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { LeafCertificates } from '../../src/proxy/forwarding/ca.ts';
import { CA_CERT_FILE, CA_KEY_FILE, loadOrCreateCa } from '../../src/crypto/gateway-ca.ts';
import { createCertificate, encodeName, issuerIdentity, keyIdentifier, randomSerial } from '../../src/crypto/x509.ts';
import { tempDir } from './helpers.ts';

const run = promisify(execFile);
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

test('names, key identifiers and IP SANs encode as RFC 5280 says', () => {
  // SEQUENCE { SET { SEQUENCE { OID 2.5.4.3, UTF8String "a" } } }
  assert.equal(hex(encodeName('a')), '300c310a300806035504030c0161');
  assert.equal(encodeName('x'.repeat(100)).length, encodeName('x'.repeat(64)).length, 'CN capped at 64 characters');
  const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  assert.equal(keyIdentifier(keys.publicKey).length, 20); // SHA-1
  const leaf = createCertificate({
    subject: encodeName('v6.test'),
    publicKey: keys.publicKey,
    selfSigningKey: keys.privateKey,
    notBefore: new Date(Date.now() - 1000),
    notAfter: new Date(Date.now() + 86400_000),
    isCa: false,
    altNames: ['2001:db8::8:800:200c:417a', '::ffff:192.0.2.1'],
    serial: randomSerial(),
  });
  assert.equal(new X509Certificate(leaf.pem).subjectAltName, 'IP Address:2001:DB8:0:0:8:800:200C:417A, IP Address:0:0:0:0:0:FFFF:C000:201');
});

test('validity after 2049 is written as GeneralizedTime and read back', () => {
  const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const notAfter = new Date('2060-01-02T03:04:05Z');
  const cert = createCertificate({
    subject: encodeName('far.test'),
    publicKey: keys.publicKey,
    selfSigningKey: keys.privateKey,
    notBefore: new Date('2020-01-01T00:00:00Z'),
    notAfter,
    isCa: true,
    serial: randomSerial(),
  });
  assert.equal(new Date(new X509Certificate(cert.pem).validTo).getTime(), notAfter.getTime());
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
