// docs/configuration.md from schema/gateway.schema.json: one table per section, every key with its
// type, default and meaning. Written by `npm run schema:build`; test/config/schema.test.ts checks the
// committed file is what the schema gives.

/** The Markdown text of docs/configuration.md. */
export function configurationDoc(schema) {
  const out = [
    '# Configuration reference',
    '',
    '<!-- Generated from schema/gateway.schema.json by `npm run schema:build`. Do not edit: edit the schema. -->',
    '',
    `${schema.description}`,
    '',
    'Editors with the YAML language server complete and check the file when its first line names the schema,',
    'as the shipped configs do: `# yaml-language-server: $schema=../schema/gateway.schema.json` (the path is',
    'relative to the config file). Manifests have their own schema, `schema/manifest.schema.json`',
    '([manifests.md](manifests.md)). `dpg validate` checks a config and its manifests and prints every problem',
    'with file and line.',
    '',
    'Environment variables override some keys: `DPG_HTTP_ADDR`, `DPG_GRPC_ADDR`, `DPG_PROXY_ADDR`,',
    '`DPG_TRANSPARENT_ADDR`, `DPG_TRANSPARENT_INSPECT`, `DPG_ADMIN_ADDR`, `DPG_LOG_LEVEL`; `DPG_DATA_DIR` names the',
    'data directory (generated keyring, identity keys, proxy CA; default `.dpg/` beside the config file) and',
    '`DPG_CONFIG` the config file.',
    '',
  ];
  for (const [name, sub] of Object.entries(schema.properties)) {
    const s = resolve(schema, sub);
    out.push(`## \`${name}\``, '', s.description ?? sub.description ?? '', '');
    const rows = [];
    if (s.type === 'object' && s.properties) collect(schema, s, name, rows);
    else rows.push(row(schema, name, sub, false));
    out.push('| key | type | default | meaning |', '|---|---|---|---|', ...rows, '');
  }
  return out.join('\n');
}

function resolve(root, s) {
  if (s && typeof s.$ref === 'string') {
    const target = s.$ref.replace(/^#\//, '').split('/').reduce((o, k) => o?.[k], root);
    return { ...resolve(root, target), ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$ref')) };
  }
  return s;
}

/** Rows for every key under an object schema, nested objects and list items included (`routes[].match.host`). */
function collect(root, objectSchema, prefix, rows) {
  const required = new Set(objectSchema.required ?? []);
  for (const [key, raw] of Object.entries(objectSchema.properties)) {
    const s = resolve(root, raw);
    const path = `${prefix}.${key}`;
    rows.push(row(root, path, raw, required.has(key)));
    if (s.type === 'object' && s.properties) collect(root, s, path, rows);
    const items = s.type === 'array' && s.items ? resolve(root, s.items) : undefined;
    if (items?.type === 'object' && items.properties) collect(root, items, `${path}[]`, rows);
  }
}

function row(root, path, raw, required) {
  const s = resolve(root, raw);
  const def = 'default' in s ? `\`${JSON.stringify(s.default)}\`` : (s.defaultText ?? (required ? 'required' : '—'));
  const meaning = [raw.description ?? s.description ?? '', extra(s)].filter(Boolean).join(' ');
  return `| \`${path}\` | ${typeText(root, s)} | ${cell(def)} | ${cell(meaning)} |`;
}

/** Ranges and forms a reader needs besides the type. */
function extra(s) {
  const parts = [];
  if (s.minimum !== undefined && s.maximum !== undefined) parts.push(`From ${s.minimum} to ${s.maximum}.`);
  else if (s.minimum !== undefined) parts.push(`At least ${s.minimum}.`);
  else if (s.maximum !== undefined) parts.push(`At most ${s.maximum}.`);
  return parts.join(' ');
}

function typeText(root, s) {
  if (s.enum) return `one of ${s.enum.map((v) => `\`${JSON.stringify(v).replace(/^"|"$/g, '')}\``).join(', ')}`.replace('`\\t`', 'tab');
  if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
  const branches = s.anyOf ?? s.oneOf;
  if (branches) return [...new Set(branches.map((b) => typeText(root, resolve(root, b))))].join(' or ');
  if (s.pattern && s.errorMessage?.includes('host:port')) return 'address (host:port)';
  if (s.pattern === '^[oO][fF][fF]$') return '`off`';
  if (s.type === 'array') return `list of ${s.items ? plural(typeText(root, resolve(root, s.items))) : 'values'}`;
  return { integer: 'integer', number: 'number', string: 'string', boolean: 'boolean', object: 'mapping' }[s.type] ?? String(s.type ?? 'any');
}

function plural(t) {
  return t.startsWith('one of') ? `values (${t})` : t === 'mapping' ? 'mappings' : `${t}s`;
}

function cell(text) {
  return String(text).replaceAll('|', '\\|').replaceAll('\n', ' ');
}
