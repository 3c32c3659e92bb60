// One generation of the configuration: the config and the engine built from it, with a count of the
// requests running under it. A reload retires the old generation; its engine (and protection
// workers) is closed only once the last request that started under it has ended.

import type { GatewayConfig } from '../config/types.ts';
import type { ProtectionEngine } from '../engine/engine.ts';

export class ConfigGeneration {
  private inFlight = 0;
  private retiring: (() => void) | undefined;

  constructor(
    /** 1 at start, one more per reload that took effect (dpg_config_generation). */
    readonly id: number,
    readonly config: GatewayConfig,
    readonly engine: ProtectionEngine,
  ) {}

  /** A request starts under this generation; call the returned function once when it has ended. */
  enter(): () => void {
    this.inFlight++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.inFlight--;
      if (this.inFlight === 0) this.retiring?.();
    };
  }

  /** Requests still running under this generation (tests, logs). */
  get running(): number {
    return this.inFlight;
  }

  /** No new request enters (the caller swapped in another); resolves once the engine is closed. */
  retire(): Promise<void> {
    const drained = this.inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.retiring = resolve));
    return drained.then(() => this.engine.close());
  }
}
