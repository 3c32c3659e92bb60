// The contract every technique file implements: validate its manifest options once, compile them
// once per manifest field, bind the compiled form to a request's keys and options, then apply it to
// values on the hot path.

import type { ForwardJobType, Scalar } from '../core/types.ts';

/** A derived key and the master key version it came from. */
export interface KeyMaterial {
  readonly kid: string;
  readonly version: number;
  /** 32 bytes, derived for one purpose, manifest, field and scope: never the master key. */
  readonly key: Uint8Array;
}

/** Keys of one manifest field within one request's scope (third party / data usage / org-wide). */
export interface FieldKeys {
  /** Key for `purpose` (e.g. 'ff1', 'hmac', 'aead') from the version active at the snapshot date. */
  active(purpose: string): KeyMaterial;
  /** The same purpose and scope for an explicit key id and version (Decrypt reads them off the ciphertext). */
  version(purpose: string, kid: string, version: number): KeyMaterial;
  /** Stable bytes naming manifest, field and scope: usable as FF1 tweak or SIV associated data. */
  readonly scope: Uint8Array;
}

/** Per-request inputs to a technique. */
export interface BindContext {
  readonly keys: FieldKeys;
  /** preserve_string_length: masks and redactions keep the input's length. */
  readonly preserveStringLength: boolean;
  /** restricted_text when use_restricted_text is set, else undefined. */
  readonly restrictedText: string | undefined;
}

/**
 * A value a technique cannot handle (too short for FPE, not a date, tampered ciphertext…).
 * `reason` is ours and never contains the value: it reaches clients and logs.
 */
export class ValueError extends Error {
  constructor(
    readonly reason: string,
    /**
     * Why, in a sentence for the request's error detail (e.g. a likely wrong keyring). Ours: it may
     * name a key id the keyring holds and a version number, never a value or key bytes.
     */
    readonly hint?: string,
  ) {
    super(reason);
    this.name = 'ValueError';
  }
}

/** A technique bound to one request: pure functions of a value. May throw ValueError. */
export interface BoundTechnique {
  forward(value: Scalar): Scalar;
  /** Present on reversible techniques (Pseudonymise formats, Encrypt). */
  inverse?(value: Scalar): Scalar;
  /**
   * Optional batched forms (one cipher call per FF1 round for a whole column). A failed entry is a
   * ValueError in the result array instead of a value.
   */
  forwardBatch?(values: readonly Scalar[]): (Scalar | ValueError)[];
  inverseBatch?(values: readonly Scalar[]): (Scalar | ValueError)[];
}

export interface CompiledTechnique {
  bind(ctx: BindContext): BoundTechnique;
  /** One line for `dpg validate` and audit: technique id and its options, no key material. */
  explain(): string;
  /**
   * Pseudonymise formats whose options also shape the pseudonyms of values detected by content
   * (the card format's keepFirst/keepBin and keepLast: docs/detection.md).
   */
  readonly detected?: { readonly keepFirst?: number; readonly keepLast?: number };
}

/** Identifies the manifest field a technique is compiled for (feeds key derivation). */
export interface TechniqueEnv {
  readonly manifest: string;
  /** Stable id of the field rule (its selector text), so keys differ per field. */
  readonly field: string;
}

/** A problem with a technique's options, reported against the manifest file by the loader. */
export class TechniqueOptionError extends Error {
  /** `path` names the option (e.g. `keepLast`) relative to the technique's options object. */
  constructor(
    message: string,
    readonly path?: string,
  ) {
    super(message);
    this.name = 'TechniqueOptionError';
  }
}

export interface Technique<O = unknown> {
  /** Registry id, e.g. `mask`, `fpe-card`, `encrypt`. */
  readonly id: string;
  /** The job type whose rules may use this technique (Restrict may also stand in for any job type). */
  readonly jobType: ForwardJobType;
  readonly reversible: boolean;
  /** Restrict: the field is removed rather than transformed. */
  readonly removesField: boolean;
  /** Validates raw options from YAML; throws TechniqueOptionError. Runs once, at load. */
  validate(options: Readonly<Record<string, unknown>>): O;
  compile(options: O, env: TechniqueEnv): CompiledTechnique;
}
