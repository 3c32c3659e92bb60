// Real upstream readers for the issue 16 tests: PHP's parse_str (the reader behind $_POST and
// $_GET), Rack's parse_nested_query (Rails' params) and libxml2 through lxml. Each runs on the
// bytes the upstream received; each is undefined when its Debian package is missing, and the
// caller prints one line saying the check was skipped (.ci/run installs php-cli, ruby-rack,
// python3-lxml).

import { spawnSync } from 'node:child_process';

function run(command: string, args: readonly string[], input: Buffer): string | undefined {
  const r = spawnSync(command, args, { input, maxBuffer: 16 * 1024 * 1024, timeout: 180_000 });
  if (r.error !== undefined || r.status !== 0) return undefined;
  return r.stdout.toString('utf8');
}

const has = (command: string, args: readonly string[]): boolean => spawnSync(command, args, { stdio: 'ignore', timeout: 180_000 }).status === 0;

export const PHP = has('php', ['-r', 'exit(0);']);
export const RACK = has('ruby', ['-e', 'require "rack"']);
/** Debian's python3-lxml is for /usr/bin/python3, which may not be the python3 first on PATH. */
export const LXML_PYTHON = ['python3', '/usr/bin/python3'].find((p) => has(p, ['-c', 'import lxml.etree']));

export const PHP_MISSING = 'php-cli is not installed (apt-get install php-cli): the PHP parse_str checks are skipped';
export const RACK_MISSING = 'ruby with rack is not installed (apt-get install ruby-rack): the Rack parse_nested_query checks are skipped';
export const LXML_MISSING = 'python3-lxml is not installed (apt-get install python3-lxml): the libxml2 checks are skipped';

/** Every leaf value of a nested object (PHP arrays, Rack params), as strings. */
function leaves(value: unknown, out: string[] = []): string[] {
  if (value !== null && typeof value === 'object') for (const v of Object.values(value)) leaves(v, out);
  else if (value !== null && value !== undefined) out.push(String(value));
  return out;
}

/** PHP's reading of a form body or query string (as $_POST holds it), and every value in it. */
export function phpParse(body: Buffer): { parsed: unknown; values: string[] } {
  const out = run('php', ['-r', 'parse_str(file_get_contents("php://stdin"), $a); echo json_encode($a, JSON_INVALID_UTF8_SUBSTITUTE);'], body);
  if (out === undefined) throw new Error('php parse_str failed');
  const parsed = JSON.parse(out) as unknown;
  return { parsed, values: leaves(parsed) };
}

/** Rack's (Rails') reading of a form body or query string. */
export function rackParse(body: Buffer): { parsed: unknown; values: string[] } {
  const script = 'require "rack"; require "json"; s = STDIN.read; s.force_encoding("UTF-8"); puts JSON.generate(Rack::Utils.parse_nested_query(s)) rescue puts "null"';
  const out = run('ruby', ['-e', script], body);
  if (out === undefined) throw new Error('ruby rack failed');
  const parsed = JSON.parse(out) as unknown;
  return { parsed, values: leaves(parsed) };
}

/**
 * libxml2's reading of an XML document's bytes (lxml, recover off): the text of every element and
 * attribute, joined by newlines; `null` when lxml refuses the document.
 */
export function lxmlText(body: Buffer): string | null {
  const script = [
    'import sys',
    'from lxml import etree',
    'try:',
    '    root = etree.fromstring(sys.stdin.buffer.read(), etree.XMLParser(resolve_entities=False, no_network=True))',
    'except Exception:',
    '    print("\\x00refused"); sys.exit(0)',
    'parts = []',
    'for e in root.iter():',
    '    parts.append(e.text or ""); parts.extend(e.attrib.values())',
    'sys.stdout.buffer.write("\\n".join(parts).encode("utf-8"))',
  ].join('\n');
  const out = run(LXML_PYTHON ?? 'python3', ['-c', script], body);
  if (out === undefined) throw new Error('lxml failed');
  return out.startsWith('\u0000refused') ? null : out;
}
