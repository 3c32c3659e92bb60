// Reading manifests as the API server and kubectl do (issue 16 class 12). They decode YAML with
// sigs.k8s.io/yaml, a go-yaml v2 reader: YAML 1.1 scalars, so `yes`/`on`/`y` are true, `0644` is
// octal 420 and `10_001` is 10001, and `<<: *base` merges. A reader that differs lets a pod say
// `privileged: yes` or `runAsUser: 10_001` to our checks as a string while the cluster runs it as
// true or as the gateway's UID. So the `yaml` package reads here in 1.1 mode with merge keys, and
// with go-yaml v2's own number rules where the package's 1.1 schema differs from them:
//   - integers are whatever Go's strconv.ParseInt(s, 0, 64) takes once every `_` is removed:
//     0b/0o/0x prefixes and a leading 0 for octal (the package's 1.1 schema has no `0o`);
//   - floats are go-yaml's pattern: digits with a leading 0 that are not octal (`08`) are floats,
//     `e0` is a string (the package's 1.1 schema reads it as NaN);
//   - no sexagesimal numbers (`1:30` is a string to go-yaml) and no timestamps (go-yaml gives
//     untyped values that look like dates back as strings).
// Written back, an integer keeps its base (`0644` stays `0644`, which both readers take as 420) and
// loses its underscores; strings that would read as anything else are quoted by the package.

import { parseAllDocuments, type DocumentOptions, type ParseOptions, type SchemaOptions, type ScalarTag, type Scalar } from 'yaml';

const INT = 'tag:yaml.org,2002:int';
const FLOAT = 'tag:yaml.org,2002:float';

/** go-yaml v2: strip every `_`, then strconv.ParseInt with base 0 (sign, then 0b / 0o / 0x / 0 / decimal). */
function goInt(text: string): number {
  const s = text.replace(/_/g, '');
  const negative = s.startsWith('-');
  const body = s.replace(/^[-+]/, '');
  let n: number;
  if (/^0[bB]/.test(body)) n = parseInt(body.slice(2), 2);
  else if (/^0[oO]/.test(body)) n = parseInt(body.slice(2), 8);
  else if (/^0[xX]/.test(body)) n = parseInt(body.slice(2), 16);
  else if (body.length > 1 && body.startsWith('0')) n = parseInt(body.slice(1), 8);
  else n = parseInt(body, 10);
  return negative ? -n : n;
}

const isInt = (value: unknown): boolean => typeof value === 'number' && Number.isInteger(value);

function intTag(format: string | undefined, test: RegExp, radix: number, prefix: string): ScalarTag {
  return {
    tag: INT,
    format,
    default: true,
    identify: isInt,
    test,
    resolve: goInt,
    stringify(item) {
      const value = (item as Scalar).value as number;
      const digits = Math.abs(value).toString(radix);
      return `${value < 0 ? '-' : ''}${prefix}${digits}`;
    },
  };
}

// A digit must follow each prefix; `_` may sit anywhere after the first character (go-yaml removes them all).
const GO_INTS: ScalarTag[] = [
  intTag('BIN', /^[-+]?0[bB]_*[01][01_]*$/, 2, '0b'),
  intTag('HEX', /^[-+]?0[xX]_*[0-9a-fA-F][0-9a-fA-F_]*$/, 16, '0x'),
  intTag('OCT', /^[-+]?0(?:[oO]_*[0-7]|_*[0-7])[0-7_]*$/, 8, '0'),
  intTag(undefined, /^[-+]?(?:0_*|[1-9][0-9_]*)$/, 10, ''),
];

/**
 * go-yaml v2's floats: every `_` removed, then `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
 * So `08` and `0_9` (not octal) are floats, and `e0` or `.e5` are strings (the package's 1.1 schema
 * reads those as NaN). `.inf` and `.nan` keep the package's tag, which go-yaml's spellings match.
 */
const GO_FLOAT: ScalarTag = {
  tag: FLOAT,
  default: true,
  identify: () => false,
  // go-yaml tries numbers only for a first character that is a digit, a sign or `.`; after a `.`
  // it is Go's ParseFloat on the text as is (no `_`), after a digit or sign the pattern above.
  test: /^(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|(?:[-+]_*)?(?:\.[0-9_]*[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE]_*[-+]?_*[0-9_]*[0-9][0-9_]*)?)$/,
  resolve: (text: string) => parseFloat(text.replace(/_/g, '')),
};

/** The package's YAML 1.1 tags, with go-yaml v2's integers, and no sexagesimal numbers or timestamps. */
const customTags = (tags: unknown[]): unknown[] => {
  const kept = (tags as ScalarTag[]).filter((t) => {
    if (t.tag === 'tag:yaml.org,2002:timestamp') return false;
    if (t.format === 'TIME') return false; // sexagesimal int and float
    if (t.tag === INT) return false; // replaced by go-yaml's rules below
    // Floats: only the .inf/.nan tag stays (it also prints every number); GO_FLOAT reads the rest.
    if (t.tag === FLOAT && !(t.test instanceof RegExp && t.test.test('.inf'))) return false;
    return true;
  });
  const firstFloat = kept.findIndex((t) => t.tag === FLOAT);
  kept.splice(firstFloat < 0 ? kept.length : firstFloat, 0, ...GO_INTS, GO_FLOAT);
  return kept;
};

/** Parse and stringify options that make a `yaml` Document read and write like go-yaml v2. */
export const KUBE_YAML: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.1',
  merge: true,
  customTags: customTags as SchemaOptions['customTags'],
};

/** Every document of a stream, read as the API server reads them. */
export function parseManifests(text: string) {
  return parseAllDocuments(text, { ...KUBE_YAML, prettyErrors: true });
}
