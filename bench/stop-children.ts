// Ends the processes a bench started (peers, upstreams, proxies): SIGTERM to each still running,
// resolved once all have exited, so no bench leaves a listener behind.

import type { ChildProcess } from 'node:child_process';

export function stopChildren(children: Iterable<ChildProcess>): Promise<void> {
  const stopping = [...children].map(
    (c) =>
      new Promise<void>((resolve) => {
        if (c.exitCode !== null || c.signalCode !== null) return resolve();
        c.once('exit', () => resolve());
        c.kill('SIGTERM');
      }),
  );
  return Promise.all(stopping).then(() => undefined);
}
