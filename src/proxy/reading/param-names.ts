// How servers read the name of a form field or query parameter. The gateway protects a pair when
// any common server would hand its value to the application under a name the manifest covers, so
// a name is matched under every reading below (issue 16, class 2; docs/proxy.md "Form and query
// names"). Names no server reads one way are refused.

import { RefusedInputError } from './body-kind.ts';

/** NUL, C0 and C1 control characters and DEL. */
const CONTROL = /[\x00-\x1f\x7f-\x9f]/;
/** A percent-escape left in a name after decoding. */
const ESCAPE = /%[0-9A-Fa-f]{2}/;

/**
 * The readings of a name already percent-decoded once (with `+` as space): the name itself and, when
 * it still holds an escape, the name decoded once more — an app behind a framework that decodes
 * again reads `card%254Eumber` as `cardNumber`. Refused (RefusedInputError, 400) when a reading
 * holds NUL or a control character: PHP cuts a name at NUL (`name%00x` is `name`) while other
 * servers keep the whole name, so there is no one reading to protect.
 */
export function paramNameReadings(name: string, where: string, index: number): readonly string[] {
  const twice = ESCAPE.test(name) ? decodeOnceMore(name) : name;
  if (CONTROL.test(name) || CONTROL.test(twice)) {
    throw new RefusedInputError('MALFORMED_DATA_SET', `The ${where} pair ${index + 1} has a name holding a NUL or control character`);
  }
  return twice === name ? [name] : [name, twice];
}

function decodeOnceMore(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name; // not percent-encoding: no server decodes it further either
  }
}

/**
 * PHP's reading of a parameter name: leading spaces dropped, then spaces and dots before any `[`
 * turned into `_` (`card.number` is `$_POST['card_number']`), and so is a `[` that is never
 * closed (`card[number` is `card_number`; a closed `[…]` is an array key). With `_` ignored by
 * name matching, such names are `cardNumber` wherever PHP would say so.
 */
export function phpName(spelled: string): string {
  const name = spelled.replace(/^ +/, '');
  const bracket = name.indexOf('[');
  const head = (bracket === -1 ? name : name.slice(0, bracket)).replace(/[. ]/g, '_');
  if (bracket === -1) return head;
  return name.includes(']', bracket) ? head + name.slice(bracket) : `${head}_${name.slice(bracket + 1)}`;
}

/**
 * The segments of a nested name as servers nest them (Rails and Rack, PHP arrays, Express's qs:
 * `customer[cardNumber]`, `customer.cardNumber`, `cards[0][number]`), for the name as sent, PHP's
 * reading of it (`first name[]` is `first_name[]`) and the name with every space read as `_`
 * (`a[first name]`: when in doubt, a segment is the field it nearly names). Empty for a flat name.
 */
export function nestedReadings(name: string): string[][] {
  const out: string[][] = [];
  for (const spelled of new Set([name, phpName(name), name.replace(/ /g, '_')])) {
    if (spelled.includes('[') || spelled.includes('.')) out.push(spelled.split(/[[\].]/).filter((x) => x !== ''));
  }
  return out;
}
