// Strict reading of a technique's manifest options: unknown names and wrong types are errors, so a
// typo in a manifest can never silently weaken protection. Runs once, at manifest load.

import { TechniqueOptionError } from './technique.ts';

export class OptionReader {
  private readonly options: Readonly<Record<string, unknown>>;

  /**
   * `allowed` lists every option name the technique accepts (its selector key included); any other
   * own key is rejected up front. `selector` pins the selector key to the value that chose it.
   */
  constructor(
    options: Readonly<Record<string, unknown>> | null | undefined,
    allowed: readonly string[],
    selector?: { readonly name: string; readonly value: string },
  ) {
    if (options === null || options === undefined) {
      this.options = {};
    } else if (typeof options !== 'object' || Array.isArray(options)) {
      throw new TechniqueOptionError('options must be a mapping');
    } else {
      this.options = options;
    }
    for (const name of Object.keys(this.options)) {
      if (!allowed.includes(name)) {
        const known = allowed.length === 0 ? 'none' : allowed.join(', ');
        throw new TechniqueOptionError(`unknown option '${name}' (known options: ${known})`, name);
      }
    }
    if (selector !== undefined && this.has(selector.name)) {
      const value = this.options[selector.name];
      if (typeof value !== 'string' || value.toLowerCase() !== selector.value) {
        throw new TechniqueOptionError(`${selector.name} must be '${selector.value}' here`, selector.name);
      }
    }
  }

  has(name: string): boolean {
    return Object.hasOwn(this.options, name) && this.options[name] !== undefined && this.options[name] !== null;
  }

  integer(name: string, spec: { readonly min?: number; readonly max?: number; readonly default: number }): number;
  integer(name: string, spec: { readonly min?: number; readonly max?: number; readonly required: true }): number;
  integer(
    name: string,
    spec: { readonly min?: number; readonly max?: number; readonly default?: number; readonly required?: true },
  ): number {
    if (!this.has(name)) return this.missing(name, spec.default);
    const value = this.options[name];
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
      throw new TechniqueOptionError(`${name} must be an integer`, name);
    }
    if (spec.min !== undefined && value < spec.min) {
      throw new TechniqueOptionError(`${name} must be at least ${spec.min}`, name);
    }
    if (spec.max !== undefined && value > spec.max) {
      throw new TechniqueOptionError(`${name} must be at most ${spec.max}`, name);
    }
    return value;
  }

  boolean(name: string, fallback: boolean): boolean {
    if (!this.has(name)) return fallback;
    const value = this.options[name];
    if (typeof value !== 'boolean') throw new TechniqueOptionError(`${name} must be true or false`, name);
    return value;
  }

  string(name: string, spec: { readonly default: string; readonly nonEmpty?: boolean }): string;
  string(name: string, spec: { readonly required: true; readonly nonEmpty?: boolean }): string;
  string(name: string, spec: { readonly default?: string; readonly required?: true; readonly nonEmpty?: boolean }): string {
    if (!this.has(name)) return this.missing(name, spec.default);
    const value = this.options[name];
    if (typeof value !== 'string') throw new TechniqueOptionError(`${name} must be a string`, name);
    if (spec.nonEmpty === true && value.length === 0) {
      throw new TechniqueOptionError(`${name} must not be empty`, name);
    }
    return value;
  }

  /** A string restricted to a list of values (compared case-insensitively, returned as listed). */
  oneOf<const T extends string>(name: string, values: readonly T[], fallback: T): T {
    if (!this.has(name)) return fallback;
    const value = this.options[name];
    const found = typeof value === 'string' ? values.find((v) => v.toLowerCase() === value.toLowerCase()) : undefined;
    if (found === undefined) {
      throw new TechniqueOptionError(`${name} must be one of: ${values.join(', ')}`, name);
    }
    return found;
  }

  /** Exactly one character (one code point): mask characters. */
  character(name: string, fallback: string): string {
    if (!this.has(name)) return fallback;
    const value = this.options[name];
    if (typeof value !== 'string' || [...value].length !== 1) {
      throw new TechniqueOptionError(`${name} must be a single character`, name);
    }
    return value;
  }

  private missing<T>(name: string, fallback: T | undefined): T {
    if (fallback === undefined) throw new TechniqueOptionError(`${name} is required`, name);
    return fallback;
  }
}
