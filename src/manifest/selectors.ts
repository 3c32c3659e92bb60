// Field selectors: names compare case-insensitively ignoring `_` and `-` (card_number = CARD-NUMBER
// = cardNumber); paths compare exactly, with `*` for one segment or index and `**` for any run.

const NOT_ASCII = /[^\x00-\x7f]/;
/** Characters no reader shows (soft hyphen, zero-width space, joiners, variation selectors). */
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * The comparison form of a field name. Upstream readers fold case more widely than `toLowerCase`:
 * Go's encoding/json matches `ſalary` (long s) and `\u212Aey` (Kelvin sign) to `salary` and `key`,
 * Java's equalsIgnoreCase and Python's casefold read `dateOfBırth` (dotless i) and `İ` as `i`. A name
 * any of them would take for a field must get that field's rule, so non-ASCII names are folded fully:
 * NFKC (fullwidth `ｓａｌａｒｙ`, ligatures), upper then lower case (full case folding: `ß` → `ss`),
 * `i` + combining dot → `i`, invisible characters dropped. ASCII names (nearly all) skip all that.
 */
export function normalizeName(name: string): string {
  let out = NOT_ASCII.test(name) ? foldUnicode(name) : name.toLowerCase();
  if (out.includes('_') || out.includes('-')) out = out.replace(/[_-]/g, '');
  return out;
}

function foldUnicode(name: string): string {
  const folded = name.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC');
  return folded.replace(IGNORABLE, '').replace(/i\u0307/g, 'i');
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
