// Field selectors: names compare case-insensitively ignoring `_` and `-` (card_number = CARD-NUMBER
// = cardNumber); paths compare exactly, with `*` for one segment or index and `**` for any run.

/** The comparison form of a field name. */
export function normalizeName(name: string): string {
  let out = name.toLowerCase();
  if (out.includes('_') || out.includes('-')) out = out.replace(/[_-]/g, '');
  return out;
}

/** Matches concrete paths against a manifest's path selectors; exact ones by lookup. */
export class PathMatcher<T> {
  private readonly exact = new Map<string, T>();
  private readonly patterns: { regex: RegExp; value: T }[] = [];

  add(pattern: string, value: T): void {
    if (!pattern.includes('*')) {
      this.exact.set(pattern, value);
      return;
    }
    this.patterns.push({ regex: compilePathPattern(pattern), value });
  }

  get size(): number {
    return this.exact.size + this.patterns.length;
  }

  match(path: string): T | undefined {
    const hit = this.exact.get(path);
    if (hit !== undefined) return hit;
    for (const p of this.patterns) if (p.regex.test(path)) return p.value;
    return undefined;
  }
}

/**
 * `$.items[*].email` matches `$.items[3].email`; in `/Envelope/Body/*` the star is one XML element
 * of any name; `**` is any sequence, separators included.
 */
export function compilePathPattern(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '*' && pattern[i + 1] === '*') {
      source += '.*';
      i++;
    } else if (ch === '*') {
      source += '[^./\\[\\]]+';
    } else {
      source += ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}
