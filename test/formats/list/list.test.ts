import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createListProtectStream, listCodec, createListCodec, type ListOptions } from '../../../src/formats/list/codec.ts';
import type { FieldAction, FieldResolver } from '../../../src/formats/codec.ts';
import type { Scalar } from '../../../src/core/types.ts';
import { DpgError } from '../../../src/core/errors.ts';

// Fake actions, so these tests do not depend on the engine.
interface CountingAction extends FieldAction {
  batches: number;
  locations: string[];
}

function action(fn: (value: Scalar) => Scalar, removes = false): CountingAction {
  const a: CountingAction = {
    batches: 0,
    locations: [],
    removes: () => removes,
    apply: (value) => fn(value),
    applyBatch(values, location) {
      a.batches++;
      values.forEach((_, i) => a.locations.push(location(i)));
      return values.map(fn);
    },
  };
  return a;
}

const rot13 = (v: Scalar): Scalar =>
  String(v).replace(/[a-z]/gi, (c) => {
    const base = c <= 'Z' ? 65 : 97;
    return String.fromCharCode(((c.charCodeAt(0) - base + 13) % 26) + base);
  });
const reverse = (v: Scalar): Scalar => [...String(v)].reverse().join('');
const mask = (v: Scalar): Scalar => String(v).replace(/.(?=.{2})/g, '*');

function resolverOf(actions: Record<string, FieldAction>, usesPaths = false): FieldResolver & { calls: [string, string | undefined][] } {
  const calls: [string, string | undefined][] = [];
  return {
    usesPaths,
    calls,
    resolve(name, path) {
      calls.push([name, path]);
      return actions[name.toLowerCase()];
    },
  };
}

async function protectStream(input: Buffer, resolver: FieldResolver, cuts: number[] = [], options: ListOptions = {}): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let from = 0;
  const pieces: Buffer[] = [];
  for (const cut of [...cuts, input.length]) {
    pieces.push(input.subarray(from, cut));
    from = cut;
  }
  await pipeline(Readable.from(pieces), createListProtectStream(resolver, options), async function* (source) {
    for await (const chunk of source) chunks.push(chunk as Buffer);
  });
  return Buffer.concat(chunks);
}

const CANONICAL =
  '\ufeffname;email;ssn;city\r\n' +
  'Zoë Ådams;zoe@example.org;123-45-6789;"Paris; France"\r\n' +
  '"Bob ""B"" Stone";"b\r\nob@x.io";;Oslo\r\n' +
  ';;;\r\n' +
  'Al;al@y.io;987;Rome';

describe('LIST protect stream', () => {
  it('round-trips canonical input byte for byte with a reversible action, at every chunk cut', async () => {
    const resolver = resolverOf({ name: action(rot13), email: action(reverse) });
    const input = Buffer.from(CANONICAL, 'utf8');
    const once = await protectStream(input, resolver);
    assert.notDeepEqual(once, input);
    assert.ok(once.toString('utf8').startsWith('\ufeffname;email;ssn;city\r\nMbë Åqnzf;gro.elpmaxe@eoz;123-45-6789;"Paris; France"\r\n'));
    for (let cut = 0; cut <= input.length; cut++) {
      const protectedBytes = await protectStream(input, resolver, [cut]);
      assert.deepEqual(protectedBytes, once, `cut at ${cut}`);
      assert.deepEqual(await protectStream(protectedBytes, resolver, [input.length - cut]), input, `back, cut at ${cut}`);
    }
  });

  it('keeps every delimiter and line ending it detects', async () => {
    for (const d of [',', ';', '\t', '|']) {
      for (const eol of ['\n', '\r\n']) {
        const text = `id${d}name${eol}1${d}ann${eol}2${d}"x${d}y"${eol}`;
        const out = listCodec.protect(text, resolverOf({ name: action(mask) }), {});
        assert.equal(out, `id${d}name${eol}1${d}*nn${eol}2${d}"*${d}y"${eol}`);
      }
    }
  });

  it('quotes a protected value only when it needs it', () => {
    const resolver = resolverOf({ a: action(() => 'has,comma'), b: action(() => 'say "hi"'), c: action(() => 'plain') });
    assert.equal(listCodec.protect('a,b,c\n1,2,"3"\n', resolver, {}), 'a,b,c\n"has,comma","say ""hi""",plain\n');
  });

  it('writes non-string results as text and null as an empty cell', () => {
    const resolver = resolverOf({ n: action(() => 42), b: action(() => true), z: action(() => null) });
    assert.equal(listCodec.protect('n,b,z\nx,y,w\n', resolver, {}), 'n,b,z\n42,true,\n');
  });

  it('removes a Restricted column, header and cells', async () => {
    const resolver = resolverOf({ ssn: action((v) => v, true), email: action(reverse) });
    const out = (await protectStream(Buffer.from(CANONICAL, 'utf8'), resolver, [30, 31, 90])).toString('utf8');
    assert.equal(
      out,
      '\ufeffname;email;city\r\n' +
        'Zoë Ådams;gro.elpmaxe@eoz;"Paris; France"\r\n' +
        '"Bob ""B"" Stone";"oi.x@bo\n\rb";Oslo\r\n' +
        ';;\r\n' +
        'Al;oi.y@la;Rome',
    );
  });

  it('resolves each header once (trimmed), with the path when the plan uses paths', () => {
    const resolver = resolverOf({ email: action(reverse) }, true);
    const text = 'id, email ,email\n' + Array.from({ length: 1000 }, (_, i) => `${i},a${i}@x,b${i}@y`).join('\n');
    listCodec.protect(text, resolver, {});
    assert.deepEqual(resolver.calls, [
      ['id', 'id'],
      ['email', 'email'],
    ]);
  });

  it('protects a column in batches and gives locations as line and column', () => {
    const email = action(reverse);
    const text = 'id,email\n' + Array.from({ length: 600 }, (_, i) => `${i},a${i}@x`).join('\n') + '\n';
    createListCodec({ batchRows: 256 }).protect(text, resolverOf({ email }), {});
    assert.equal(email.batches, 3);
    assert.equal(email.locations.length, 600);
    assert.equal(email.locations[0], 'line 2, column email');
    assert.equal(email.locations[599], 'line 601, column email');
  });

  it('rejects a ragged row with its line number, never its content', async () => {
    const resolver = resolverOf({ email: action(reverse) });
    for (const row of ['1,secret@x.io,extra', '1']) {
      const input = Buffer.from(`id,email\n0,a@b\n"multi\nline",x\n${row}\n`, 'utf8');
      await assert.rejects(protectStream(input, resolver, [5]), (err: unknown) => {
        assert.ok(err instanceof DpgError);
        assert.equal(err.code, 'MALFORMED_DATA_SET');
        assert.match(err.message, /line 5 has \d cells but the header has 2/);
        assert.ok(!err.message.includes('secret'));
        return true;
      });
    }
  });

  it('stops before releasing a batch when beforeRelease throws', async () => {
    const input = Buffer.from('id,email\n1,a@b\n2,c@d\n', 'utf8');
    const released: Buffer[] = [];
    const stream = createListProtectStream(resolverOf({ email: action(reverse) }), {
      beforeRelease() {
        throw new DpgError('VALUE_NOT_PROTECTABLE', 'values failed');
      },
    });
    stream.on('data', (chunk: Buffer) => released.push(chunk));
    await assert.rejects(pipeline(Readable.from([input]), stream), /values failed/);
    assert.equal(Buffer.concat(released).toString('utf8'), '');
  });

  it('handles header-only, empty and blank-line inputs', () => {
    const resolver = resolverOf({ email: action(reverse) });
    assert.equal(listCodec.protect('', resolver, {}), '');
    assert.equal(listCodec.protect('id,email', resolver, {}), 'id,email');
    assert.equal(listCodec.protect('id,email\n\n1,ab\n\n', resolver, {}), 'id,email\n\n1,ba\n\n');
    assert.throws(() => listCodec.protect({ not: 'text' }, resolver, {}), /must be text/);
  });

  it('applies limits from the options', () => {
    const codec = createListCodec({ maxFieldBytes: 10 });
    assert.throws(
      () => codec.protect('id,email\n1,' + 's'.repeat(50) + '\n', resolverOf({}), {}),
      (err: unknown) => err instanceof DpgError && err.code === 'PAYLOAD_TOO_LARGE' && !err.message.includes('sss'),
    );
  });

  it('streams large input in bounded output chunks', async () => {
    const rows = 20_000;
    const text = 'id,name,email\n' + Array.from({ length: rows }, (_, i) => `${i},name${i},user${i}@x.io`).join('\n') + '\n';
    const input = Buffer.from(text, 'utf8');
    const cuts = Array.from({ length: Math.floor(input.length / 4096) }, (_, i) => (i + 1) * 4096);
    const out = await protectStream(input, resolverOf({ name: action(rot13) }), cuts);
    const back = await protectStream(out, resolverOf({ name: action(rot13) }));
    assert.deepEqual(back, input);
  });
});
