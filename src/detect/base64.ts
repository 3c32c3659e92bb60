// Text carried as base64 (Pub/Sub messages, data URLs, tokens of other systems), read only where a
// manifest says so (`detect.base64: true`): a whole value in the standard or URL-safe alphabet that
// decodes to UTF-8 text without control characters, and that encodes back to exactly the same
// characters (so the protected text can be written back the same way and reversed exactly).

const STANDARD = /^[A-Za-z0-9+/]+={0,2}$/;
const URL_SAFE = /^[A-Za-z0-9_-]+={0,2}$/;
/** Shorter values are ids and words far more often than base64 text. */
const MIN_LENGTH = 12;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export interface Base64Text {
  /** The decoded text. */
  readonly text: string;
  /** `text` (or a protected version of it) written back in the value's alphabet and padding. */
  encode(text: string): string;
}

export function base64Text(value: string): Base64Text | undefined {
  if (value.length < MIN_LENGTH) return undefined;
  const standard = STANDARD.test(value);
  if (!standard && !URL_SAFE.test(value)) return undefined;
  const urlSafe = !standard; // `-` or `_` in it; a value with neither reads the same in both alphabets
  const padded = value.endsWith('=');
  if (padded && value.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(value, urlSafe ? 'base64url' : 'base64');
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return undefined;
  }
  // Text only: no control characters other than tab, line feed, carriage return.
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text)) return undefined;
  const write = (t: string): string => {
    const bare = Buffer.from(t, 'utf8').toString(urlSafe ? 'base64url' : 'base64').replace(/=+$/, '');
    return padded ? bare.padEnd(Math.ceil(bare.length / 4) * 4, '=') : bare;
  };
  // Only a canonical encoding is taken: written back, the text gives exactly the same characters.
  if (write(text) !== value) return undefined;
  return { text, encode: write };
}
