// Names a client chose (JSON keys, XML element names, SQL columns, CSV headers, gRPC labels, form
// fields, unknown manifest names) can themselves be personal data: a key may be an email address,
// a header a card number. Before such a name goes into an error, a failure location or a log line it
// passes through here, and anything that is not a plain identifier is replaced by a placeholder.

/** What stands in for a name that is not shown. */
export const WITHHELD = '?';

/**
 * A plain identifier: an ASCII letter or `_` first, then letters, digits, `_` and `-`, at most 64
 * characters. No `.`, `@`, spaces or other punctuation, and never all digits: e-mail addresses,
 * host names, card and phone numbers, names with spaces all fail it.
 */
const SAFE_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

export function isSafeName(name: string): boolean {
  return SAFE_NAME.test(name);
}

/** The name itself when it is a plain identifier, else the placeholder. */
export function safeName(name: string): string {
  return SAFE_NAME.test(name) ? name : WITHHELD;
}

/**
 * The shapes failure locations take (docs/manifests.md): a JSON path (`$.orders[3].cardNumber`,
 * `$.a[?]`), an XML path (`/Envelope/Body/c:card/@id`), `row N, column NAME` (gRPC),
 * `line N, column NAME` (LIST), `NAME at L:C` or `table.NAME at L:C` (SQL), `form.NAME` /
 * `query.NAME` (proxy forms and query strings). Names in them are plain identifiers (XML names
 * may carry one `prefix:`) or the placeholder.
 */
const NAME = '(?:[A-Za-z_][A-Za-z0-9_-]{0,63}|\\?)';
const XML_NAME = `(?:(?:[A-Za-z_][A-Za-z0-9_.-]{0,63}:)?${NAME})`;
const SAFE_LOCATION = new RegExp(
  [
    `\\$(?:\\.${NAME}|\\[(?:\\d{1,10}|\\?)\\])*`,
    `(?:/@?${XML_NAME})+`,
    `(?:row|line) \\d{1,10}, column ${NAME}`,
    `(?:${NAME}\\.)?${NAME} at \\d{1,10}:\\d{1,10}`,
    `(?:form|query)\\.${NAME}`,
  ]
    .map((shape) => `(?:${shape})`)
    .join('|')
    .replace(/^/, '^(?:')
    .replace(/$/, ')$'),
);

/** ` (detected card)`: our own words, appended to a field's location for a value found by content. */
const DETECTED_SUFFIX = / \(detected (?:card|email|phone|iban|ssn|ipAddress|token)\)$/;

/**
 * A failure location fit for a response or a log: unchanged when it has one of the documented
 * shapes with plain names; otherwise only its leading kind survives (`form.jane.doe@example.com`
 * → `form.?`: a client's name may hold dots, so no later part can be trusted). Codecs build safe
 * locations themselves; this is the engine's last check, so a location built elsewhere (proxy form
 * fields, query parameters) cannot carry a client's name out either.
 */
export function safeLocation(location: string): string {
  // A value found by content carries its kind after the field's location (docs/detection.md).
  const detected = DETECTED_SUFFIX.exec(location);
  if (detected !== null) return safeLocation(location.slice(0, detected.index)) + detected[0];
  if (location.length <= 512 && SAFE_LOCATION.test(location)) return location;
  const kind = /^(\$|[A-Za-z_][A-Za-z0-9_-]{0,63})[.[]/.exec(location)?.[1];
  return kind === undefined ? WITHHELD : `${kind}.${WITHHELD}`;
}
