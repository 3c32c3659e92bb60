// libphonenumber's national-number patterns as automata, so the valid numbers of a plan can be
// counted and ranked (phone-number-space.ts) instead of only tested. The patterns use a small,
// regular subset of regular expressions — digits, `\d`, digit classes `[0-8]`, groups `(…)` and
// `(?:…)`, `|`, `?` and bounded repeats `{n}`, `{n,m}` — because libphonenumber's C++ build runs
// them with RE2; anything else is refused here, loudly, rather than counted wrong.

/** A Thompson automaton over the digits 0-9, built from several patterns that share its start. */
export class DigitNfa {
  /** Per state: the digits (bit d) its one digit edge takes, 0 when it has none. */
  readonly digitMask: number[] = [];
  /** Per state: the state its digit edge leads to. */
  readonly digitTo: number[] = [];
  /** Per state: its epsilon edges. */
  readonly epsilon: number[][] = [];
  /** Per state: the bit of each pattern whose whole match ends there. */
  readonly finalBits: number[] = [];
  readonly start: number;

  constructor() {
    this.start = this.state();
  }

  state(): number {
    this.digitMask.push(0);
    this.digitTo.push(-1);
    this.epsilon.push([]);
    this.finalBits.push(0);
    return this.digitMask.length - 1;
  }

  /** Adds `pattern` (matched whole) from the start; its matches end on a state marked `bit`. */
  add(pattern: string, bit: number): void {
    const end = this.build(new PatternParser(pattern).parse(), this.start);
    this.finalBits[end] |= bit;
  }

  /** The end state of `node` built from `from`. */
  private build(node: PatternNode, from: number): number {
    switch (node.t) {
      case 'digits': {
        const a = this.state();
        const b = this.state();
        this.epsilon[from].push(a);
        this.digitMask[a] = node.mask;
        this.digitTo[a] = b;
        return b;
      }
      case 'seq':
        return node.items.reduce((at, item) => this.build(item, at), from);
      case 'alt': {
        const end = this.state();
        for (const option of node.options) this.epsilon[this.build(option, from)].push(end);
        return end;
      }
      case 'repeat': {
        let at = from;
        for (let k = 0; k < node.min; k++) at = this.build(node.node, at);
        const end = this.state();
        this.epsilon[at].push(end);
        for (let k = node.min; k < node.max; k++) {
          at = this.build(node.node, at);
          this.epsilon[at].push(end);
        }
        return end;
      }
    }
  }
}

type PatternNode =
  | { readonly t: 'digits'; readonly mask: number }
  | { readonly t: 'seq'; readonly items: readonly PatternNode[] }
  | { readonly t: 'alt'; readonly options: readonly PatternNode[] }
  | { readonly t: 'repeat'; readonly node: PatternNode; readonly min: number; readonly max: number };

const ALL_DIGITS = 0x3ff;

class PatternParser {
  private at = 0;

  constructor(private readonly source: string) {}

  parse(): PatternNode {
    const node = this.alternation();
    if (this.at !== this.source.length) this.fail();
    return node;
  }

  private alternation(): PatternNode {
    const options = [this.sequence()];
    while (this.source[this.at] === '|') {
      this.at++;
      options.push(this.sequence());
    }
    return options.length === 1 ? options[0] : { t: 'alt', options };
  }

  private sequence(): PatternNode {
    const items: PatternNode[] = [];
    while (this.at < this.source.length && this.source[this.at] !== '|' && this.source[this.at] !== ')') items.push(this.quantified(this.atom()));
    return { t: 'seq', items };
  }

  private atom(): PatternNode {
    const s = this.source;
    const c = s[this.at];
    if (c === '(') {
      this.at += s.startsWith('(?:', this.at) ? 3 : 1;
      const inner = this.alternation();
      if (s[this.at] !== ')') this.fail();
      this.at++;
      return inner;
    }
    if (c === '\\' && s[this.at + 1] === 'd') {
      this.at += 2;
      return { t: 'digits', mask: ALL_DIGITS };
    }
    if (c === '[') return this.digitClass();
    if (c >= '0' && c <= '9') {
      this.at++;
      return { t: 'digits', mask: 1 << (c.charCodeAt(0) - 48) };
    }
    return this.fail();
  }

  private digitClass(): PatternNode {
    const s = this.source;
    let mask = 0;
    this.at++;
    while (s[this.at] !== ']') {
      const lo = s.charCodeAt(this.at) - 48;
      if (!(lo >= 0 && lo <= 9)) this.fail();
      let hi = lo;
      if (s[this.at + 1] === '-') {
        hi = s.charCodeAt(this.at + 2) - 48;
        if (!(hi >= lo && hi <= 9)) this.fail();
        this.at += 2;
      }
      for (let d = lo; d <= hi; d++) mask |= 1 << d;
      this.at++;
    }
    this.at++;
    return { t: 'digits', mask };
  }

  private quantified(node: PatternNode): PatternNode {
    const s = this.source;
    if (s[this.at] === '?') {
      this.at++;
      return { t: 'repeat', node, min: 0, max: 1 };
    }
    if (s[this.at] !== '{') return node;
    const close = s.indexOf('}', this.at);
    const m = /^\{(\d+)(?:,(\d+))?\}$/.exec(s.slice(this.at, close + 1));
    if (m === null) return this.fail();
    this.at = close + 1;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : Number(m[2]);
    if (max < min) this.fail();
    return { t: 'repeat', node, min, max };
  }

  private fail(): never {
    throw new Error(`phone pattern outside the supported subset at ${this.at}: ${this.source.slice(0, 80)}`);
  }
}
