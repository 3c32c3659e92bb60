// Bounds the scrypt work that unauthenticated token requests can cause: a few secret checks run at
// once, a bounded number wait their turn, and the rest are refused at once (503 at the endpoint).

export interface SecretCheckLimits {
  /** Token requests verifying secrets at the same time (each runs its scrypt checks one by one). */
  readonly maxInFlight: number;
  /** Token requests waiting for a free slot; one more is refused without any scrypt work. */
  readonly maxQueued: number;
}

/**
 * Two at a time leaves half of libuv's default pool of four threads to file and other crypto work
 * (one scrypt holds a thread for about 50 ms); sixteen waiting is under half a second of backlog.
 */
export const DEFAULT_SECRET_CHECK_LIMITS: SecretCheckLimits = { maxInFlight: 2, maxQueued: 16 };

/** How long a refused caller is told to wait (Retry-After, seconds). */
export const SECRET_CHECK_RETRY_AFTER_SECONDS = 1;

export class SecretCheckGate {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limits: SecretCheckLimits = DEFAULT_SECRET_CHECK_LIMITS) {
    if (!(limits.maxInFlight >= 1) || !(limits.maxQueued >= 0)) throw new Error('secret check limits must be positive');
  }

  /**
   * Runs `work` once a slot is free. Resolves to undefined at once, without running it, when the
   * queue is full: the decision is taken synchronously, before any secret is touched.
   */
  async run<T>(work: () => Promise<T>): Promise<T | undefined> {
    if (this.inFlight < this.limits.maxInFlight) {
      this.inFlight++;
    } else {
      if (this.waiting.length >= this.limits.maxQueued) return undefined;
      // The slot is handed over by release(): inFlight stays as it is.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
    else this.inFlight--;
  }
}
