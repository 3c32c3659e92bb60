// A changed value written over its original writing in a document (XML character data, a SQL
// string literal): only the changed stretch is rewritten, so the bytes a rule did not change stay
// exactly as sent — a raw `>`, a character reference, Snowflake's `\<` (issue 17). Each format
// says where each character of the value is written (`at`) and how a new character is escaped.

/**
 * The edit writing `replacement` over `raw`, which reads as `value`, with `at[i]` where value's
 * character i is written in raw (`at[value.length]` = raw's length): [from, to) of raw and the
 * text to write there. Characters before the first change and after the last keep their writing;
 * for a result of the same length (Mask, format-preserving Pseudonymise, Reconstruct) so does every
 * unchanged character between. A character beyond U+FFFF is never split from its other half.
 */
export function keptWriting(raw: string, at: readonly number[], value: string, replacement: string, escape: (text: string) => string): [number, number, string] {
  const n = Math.min(value.length, replacement.length);
  let head = 0;
  while (head < n && value.charCodeAt(head) === replacement.charCodeAt(head)) head++;
  if (head > 0 && isHighSurrogate(value.charCodeAt(head - 1))) head--;
  let tail = 0;
  while (tail < n - head && value.charCodeAt(value.length - 1 - tail) === replacement.charCodeAt(replacement.length - 1 - tail)) tail++;
  if (tail > 0 && isHighSurrogate(value.charCodeAt(value.length - 1 - tail))) tail--;
  const end = value.length - tail;
  if (end - head !== replacement.length - tail - head) return [at[head], at[end], escape(replacement.slice(head, replacement.length - tail))];
  let text = '';
  for (let i = head; i < end; i++) {
    const width = isHighSurrogate(value.charCodeAt(i)) || isHighSurrogate(replacement.charCodeAt(i)) ? 2 : 1;
    const same = value.slice(i, i + width) === replacement.slice(i, i + width);
    text += same ? raw.slice(at[i], at[i + width]) : escape(replacement.slice(i, i + width));
    i += width - 1;
  }
  return [at[head], at[end], text];
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
