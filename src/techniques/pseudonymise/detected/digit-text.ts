// The digits of a detected value and where they sit: schemes rewrite digits in place, so every
// separator, bracket and `+` stays exactly where it was written.

/** The ASCII digits of `text`, in order, as numbers 0-9. */
export function digitsOf(text: string): Uint16Array {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) n++;
  }
  const out = new Uint16Array(n);
  let k = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) out[k++] = c - 48;
  }
  return out;
}

/** `text` with its digits replaced, in order, by `digits` (as many as it has). */
export function withDigits(text: string, digits: ArrayLike<number>): string {
  let out = '';
  let k = 0;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) continue;
    if (i > from) out += text.slice(from, i);
    out += String.fromCharCode(48 + digits[k++]);
    from = i + 1;
  }
  return out + text.slice(from);
}

/** Digits[from, from + count) as one number (count <= 15). */
export function digitsValue(digits: ArrayLike<number>, from: number, count: number): number {
  let v = 0;
  for (let k = 0; k < count; k++) v = v * 10 + digits[from + k];
  return v;
}

/** Writes `value` as `count` digits into digits[from, from + count). */
export function writeValue(digits: Uint16Array, from: number, count: number, value: number): void {
  for (let k = count - 1; k >= 0; k--) {
    digits[from + k] = value % 10;
    value = Math.floor(value / 10);
  }
}

/** scope || 0x02 || label: the detected-value schemes' tweaks, apart from every format's (0x00, 0x01). */
export class DetectedTweaks {
  readonly #cache = new Map<string, Uint8Array>();

  constructor(private readonly scope: Uint8Array) {}

  get(label: string): Uint8Array {
    let tweak = this.#cache.get(label);
    if (tweak === undefined) {
      tweak = new Uint8Array(this.scope.length + 1 + label.length);
      tweak.set(this.scope, 0);
      tweak[this.scope.length] = 2;
      for (let i = 0; i < label.length; i++) tweak[this.scope.length + 1 + i] = label.charCodeAt(i) & 0xff;
      if (this.#cache.size < 4096) this.#cache.set(label, tweak);
    }
    return tweak;
  }
}
