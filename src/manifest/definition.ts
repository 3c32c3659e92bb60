// The manifest as written (data only): what docs/manifests.md describes and `dpg validate` checks.
// compile.ts turns it into the immutable plan that runs.

import type { ConfigProblem } from '../core/errors.ts';
import type { ForwardJobType } from '../core/types.ts';
import type { DetectKind } from '../detect/kinds.ts';
import type { Technique } from '../techniques/technique.ts';

/** Request-context tests; every listed test must hold (AND); a list means "any of these". */
export interface ConditionDef {
  readonly countryCode?: readonly string[];
  readonly dataOwningCountryCode?: readonly string[];
  /** true: both country codes given and different; false: both given and equal, or either missing. */
  readonly crossBorder?: boolean;
  readonly thirdPartyId?: readonly number[];
  readonly dataUsageId?: readonly number[];
  /** matchingRule claims: attribute name → accepted values (case-sensitive values, case-insensitive names). */
  readonly claims?: Readonly<Record<string, readonly string[]>>;
}

/** One job type's rule for a field: a technique and its validated options. */
export interface RuleDef {
  readonly technique: Technique;
  readonly options: unknown;
  /** The options as written, for explain(). */
  readonly written: string;
}

export type RuleSet = Partial<Record<ForwardJobType, RuleDef>>;

export interface OverrideDef {
  readonly condition: ConditionDef;
  readonly rules: RuleSet;
  readonly line?: number;
}

export type SelectorDef =
  | { readonly kind: 'name'; readonly names: readonly string[] }
  | { readonly kind: 'path'; readonly path: string }
  /** A field entry with only `kind:`: rules for values detected by content, no name or path. */
  | { readonly kind: 'detected'; readonly detected: DetectKind };

export interface FieldDef {
  readonly selector: SelectorDef;
  readonly rules: RuleSet;
  /** Checked in order; the first whose condition holds replaces the rules it names. */
  readonly when: readonly OverrideDef[];
  readonly line?: number;
  /** `kind: card`: values detected as this kind get this field's rules (and keys). */
  readonly detects?: DetectKind;
  /** Job types written `Keep`: left in clear on purpose (no gap warning). */
  readonly keep?: readonly ForwardJobType[];
  /**
   * The field's key identity (keys and pseudonyms derive from it), compared like field names.
   * Absent: the first name of `match` (or the `path`), as before `keyName` existed.
   */
  readonly keyName?: string;
}

/** `detect:`: which kinds are looked for by content in fields no selector claims. */
export interface DetectDef {
  readonly kinds: readonly DetectKind[];
  /** Also values inside longer text (default true); false: whole values only. */
  readonly inText: boolean;
  /**
   * Regions whose national phone writings are detected (`DE`: `030 1234567`), validated against
   * libphonenumber's numbering plans; empty (the default): NANP and international writings only.
   */
  readonly phoneRegions?: readonly string[];
  /** Whole values that are base64 text are decoded and protected inside, then re-encoded (default false). */
  readonly base64?: boolean;
  readonly line?: number;
}

export interface ManifestDef {
  readonly name: string;
  readonly description?: string;
  /** Keyring key id for this manifest's keys; default: the keyring's default key. */
  readonly keyId?: string;
  readonly fields: readonly FieldDef[];
  /** Source file, for messages. */
  readonly file: string;
  readonly detect?: DetectDef;
  /** `strict: true`: a field one job type protects and another leaves in clear is an error. */
  readonly strict?: boolean;
  /** Problems that do not stop loading (job-type gaps when not strict). */
  readonly warnings?: readonly ConfigProblem[];
}
