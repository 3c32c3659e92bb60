// Block YAML for plain data (what JSON can hold), written directly: the items of a large List are
// printed this way (manual.ts), because building and printing a `yaml` node tree for each of them
// was most of `dpg inject`'s time and memory on `kubectl get deploy -o yaml` output (issue 16 class
// 14). What it writes must read back as the same data under go-yaml v2 (the API server's reader)
// and manifest-yaml.ts; test/k8s/yaml-emit.test.ts checks that as a property. So it is cautious:
// a string is written plain only when it is made of characters that cannot start or end anything
// in YAML and no YAML 1.1 reader could take it for another type; everything else is double-quoted,
// with every character YAML does not take raw escaped. The layout is the yaml package's (two-space
// indents, sequences indented under their key), so both paths print alike.

type Data = null | boolean | number | string | Data[] | { [key: string]: Data };

/**
 * Safe plain: starts with a letter, `_`, `/`, or `-`/`--` then a letter (flags); then letters, digits
 * and `_ . / - : = +`; no `:` at the end. No number, boolean or null of any YAML 1.1 reader starts so.
 */
const SAFE_PLAIN = /^(?:[A-Za-z_/]|--?[A-Za-z])[A-Za-z0-9_./:=+-]*$/;
/**
 * Also plain: digits first (`10m`, `32Mi`) with a letter no number syntax uses (not a-f, e, o, x,
 * b: hex, exponent, base prefixes) and no `:` (sexagesimal, times).
 */
const UNIT = /^[0-9][0-9A-Za-z_./-]*$/;
const NON_NUMERIC_LETTER = /[g-nG-Np-wP-WyzYZ]/;
/** YAML 1.1 booleans and nulls (go-yaml v2's lists; compared in lower case, so a few more are quoted). */
const WORDS = new Set(['y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null']);

function plain(text: string): boolean {
  if (UNIT.test(text)) return NON_NUMERIC_LETTER.test(text);
  return SAFE_PLAIN.test(text) && !text.endsWith(':') && !WORDS.has(text.toLowerCase());
}

/**
 * A quoted YAML scalar: single quotes for printable ASCII holding a `"` (only `'` is doubled there),
 * else double quotes with JSON's escapes plus those of characters YAML will not take raw.
 */
function quoted(text: string): string {
  if (text.includes('"') && /^[\x20-\x7e]+$/.test(text)) return `'${text.replace(/'/g, "''")}'`;
  return JSON.stringify(text).replace(/[\u007f-\u009f\u00ad\u2028\u2029\ufeff\ufff9-\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function scalar(value: Data): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return '.nan';
    if (!Number.isFinite(value)) return value > 0 ? '.inf' : '-.inf';
    return Object.is(value, -0) ? '0' : String(value);
  }
  return plain(value as string) ? (value as string) : quoted(value as string);
}

const isCollection = (v: Data): v is Data[] | { [key: string]: Data } => typeof v === 'object' && v !== null;
const isEmpty = (v: Data[] | { [key: string]: Data }): boolean => (Array.isArray(v) ? v.length === 0 : Object.keys(v).length === 0);

/** Lines of `value` at `indent` spaces; a scalar or empty collection is one line. */
function lines(value: Data, indent: number, out: string[]): void {
  const pad = ' '.repeat(indent);
  if (!isCollection(value) || isEmpty(value)) {
    out.push(`${pad}${isCollection(value) ? (Array.isArray(value) ? '[]' : '{}') : scalar(value)}`);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      const start = out.length;
      lines(item, indent + 2, out);
      out[start] = `${pad}- ${out[start]!.slice(indent + 2)}`;
    }
    return;
  }
  for (const key of Object.keys(value)) {
    const v = value[key]!;
    const k = scalar(key);
    if (isCollection(v) && !isEmpty(v)) {
      out.push(`${pad}${k}:`);
      lines(v, indent + 2, out);
    } else {
      out.push(`${pad}${k}: ${isCollection(v) ? (Array.isArray(v) ? '[]' : '{}') : scalar(v)}`);
    }
  }
}

/** `value` as block YAML at `indent` spaces, one trailing newline. */
export function emitYaml(value: unknown, indent = 0): string {
  const out: string[] = [];
  lines(value as Data, indent, out);
  return `${out.join('\n')}\n`;
}
