// What every door's start function returns (the lead may move this to a shared module).

export interface RunningServer {
  /** The bound address; the real port when the config asked for port 0. */
  readonly address: { host: string; port: number };
  /** Stops accepting calls, lets in-flight ones finish for up to `graceMs`, then cuts the rest. */
  close(graceMs?: number): Promise<void>;
}
