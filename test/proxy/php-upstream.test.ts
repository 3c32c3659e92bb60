// Issue 16, classes 1 and 2 against a real PHP upstream (`php -S`, Debian's php-cli): what PHP
// reads into $_POST, $_GET and SimpleXML (libxml2) from what the proxy forwards never holds the
// name in clear. Without php-cli the test prints one SKIPPED line.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { proxyConfig, rawPost, route, sendRaw, startTestProxy, type TestProxy } from './helpers.ts';
import { PHP, PHP_MISSING } from './real-readers.ts';

const NAME = 'Jane Doe';

async function startPhp(): Promise<{ child: ChildProcess; port: number }> {
  const script = fileURLToPath(new URL('./fixtures/php_upstream.php', import.meta.url));
  const child = spawn('php', ['-S', '127.0.0.1:0', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    const onData = (d: Buffer): void => {
      text += d.toString();
      const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (m) resolve(Number(m[1]));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', () => reject(new Error(`php -S exited: ${text}`)));
  });
  return { child, port };
}

if (!PHP) console.log(`SKIPPED: ${PHP_MISSING}`);

describe('a real PHP upstream (php -S) reads no name in clear', { skip: PHP ? false : PHP_MISSING }, () => {
  let php: { child: ChildProcess; port: number };
  let p: TestProxy;

  before(async () => {
    php = await startPhp();
    p = await startTestProxy(
      proxyConfig({
        routes: [route('php', { match: { host: '127.0.0.1', port: php.port, path: '/**' }, request: { manifest: 'customer', jobType: 'Mask', queryParams: ['name', 'firstName', 'customer'] } })],
      }),
    );
  });

  after(async () => {
    await p?.close();
    php?.child.kill();
  });

  async function phpReads(target: string, body: string | Buffer, contentType: string, method = 'POST'): Promise<{ status: number; text: string }> {
    const res = await sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${php.port}${target}`, `127.0.0.1:${php.port}`, body, contentType, method));
    return { status: res.status, text: res.body.toString('utf8') };
  }

  test('$_POST and $_GET under PHP\'s name mangling', async () => {
    const names = ['name', 'first.name', 'first name', ' firstName', 'first[name', 'customer[firstName]', 'customer[first_name]', 'first%2Ename', 'first%252Ename', 'a[0][first name]', 'FIRST_NAME'];
    for (const name of names) {
      const encoded = name.replace(/ /g, '%20');
      const form = await phpReads('/form', `${encoded}=Jane+Doe&x=1`, 'application/x-www-form-urlencoded');
      assert.equal(form.status, 200, form.text);
      assert.ok(!form.text.includes(NAME), `PHP read ${NAME} from the form name ${name}: ${form.text}`);
      assert.match(form.text, /"x":"1"/);
      const query = await phpReads(`/q?${encoded}=Jane+Doe&x=1`, '', 'text/plain', 'GET');
      assert.equal(query.status, 200, query.text);
      assert.ok(!query.text.includes(NAME), `PHP read ${NAME} from the query name ${name}: ${query.text}`);
    }
    // The NUL cut PHP applies is refused before PHP sees it.
    const nul = await phpReads('/form', 'name%00x=Jane+Doe', 'application/x-www-form-urlencoded');
    assert.equal(nul.status, 400);
    assert.ok(!nul.text.includes(NAME));
  });

  test('SimpleXML (libxml2) reads protected UTF-8 and UTF-16 documents; a UTF-7 one never reaches it', async (t) => {
    const utf8 = await phpReads('/xml', `<?xml version="1.0" encoding="UTF-8"?><customer><name>${NAME}</name></customer>`, 'application/xml');
    if (utf8.status === 501) {
      const why = 'php-xml is not installed (apt-get install php-xml): the SimpleXML checks are skipped';
      t.diagnostic(why);
      console.log(`SKIPPED: ${why}`);
      return;
    }
    assert.equal(utf8.status, 200, utf8.text);
    assert.match(utf8.text, /"name":"J\*\*\* D\*\*"/);
    const doc16 = `<?xml version="1.0" encoding="UTF-16"?><customer><name>${NAME}</name></customer>`;
    const utf16 = await phpReads('/xml', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(doc16, 'utf16le')]), 'application/xml');
    assert.equal(utf16.status, 200, utf16.text);
    assert.match(utf16.text, /"name":"J\*\*\* D\*\*"/);
    const utf7 = await phpReads('/xml', '<?xml version="1.0" encoding="UTF-7"?>+ADw-customer+AD4-+ADw-name+AD4-Jane Doe+ADw-/name+AD4-+ADw-/customer+AD4-', 'application/xml');
    assert.equal(utf7.status, 415, utf7.text);
    assert.ok(!utf7.text.includes(NAME));
  });
});
