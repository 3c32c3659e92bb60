// Words just before a bare number that say what it is. Presidio-style context, kept to the few
// places where the digits alone cannot decide: a bare nine-digit number is an SSN only after an SSN
// word (ssn.ts); a bare ten-digit number is not a phone after a word naming another kind of number.

/** Punctuation skipped between a context word and its number: space, tab, `"`, `#`, `'`, `.`, `:`, `=`, no-break space. */
export function isContextPunctuation(c: number): boolean {
  return c === 32 || c === 9 || c === 34 || c === 35 || c === 39 || c === 46 || c === 58 || c === 61 || c === 0xa0;
}

/** The lower-cased few words before `at`, past the punctuation just before it; undefined when glued to a word. */
export function wordsBefore(text: string, at: number): string | undefined {
  let i = at;
  const stop = Math.max(0, at - 6);
  while (i > stop && isContextPunctuation(text.charCodeAt(i - 1))) i--;
  if (i === at && at > 0) {
    const c = text.charCodeAt(at - 1);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95) return undefined;
  }
  return text.slice(Math.max(0, i - 24), i).toLowerCase();
}

const OTHER_NUMBER = /(?:^|[^a-z0-9_])(?:isbn(?:-1[03])?|ean|gtin|upc|order|invoice|ref|reference|tracking|sku|id|account|acct|item|ticket|serial|po|build|version|barcode)$/;

/** A bare number at `at` follows a word naming another kind of number (`ISBN`, `order`…) or `#`. */
export function bareNumberRefused(text: string, at: number): boolean {
  if (text.charCodeAt(at - 1) === 35 /* # */) return true;
  const words = wordsBefore(text, at);
  return words !== undefined && OTHER_NUMBER.test(words);
}
