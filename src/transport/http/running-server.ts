// What every door's start function returns (the lead may move this to a shared module).

export interface RunningServer {
  readonly address: { host: string; port: number };
  /** Stops accepting, lets in-flight requests finish for up to graceMs, then cuts what is left. */
  close(graceMs?: number): Promise<void>;
}
