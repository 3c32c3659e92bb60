// Finds the gateway's own `enc:v1:…` tokens inside text, so Decrypt (and Reconstruct of values that
// fell back to a token) can open them in place. A token is `enc:v1:` followed by its mode, key id,
// version and base64url data: letters, digits and `._:-`; a trailing `.` or `:` is punctuation.
// A token may follow any character: a detected value can start right after a digit or a letter
// (`0(415) 555-0132`), and its token must be found there too; the prefix is the gateway's own.

const PREFIX = 'enc:v1:';

function isTokenChar(c: number): boolean {
  return (c >= 48 && c <= 58) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 45 || c === 46 || c === 95;
}

/** [start, end) pairs of every token in `text`, in order. */
export function findTokens(text: string): [number, number][] {
  const out: [number, number][] = [];
  let from = 0;
  for (;;) {
    const start = text.indexOf(PREFIX, from);
    if (start < 0) return out;
    let end = start + PREFIX.length;
    while (end < text.length && isTokenChar(text.charCodeAt(end))) end++;
    while (end > start + PREFIX.length && (text.charCodeAt(end - 1) === 46 || text.charCodeAt(end - 1) === 58)) end--;
    if (end > start + PREFIX.length) out.push([start, end]);
    from = end;
  }
}
