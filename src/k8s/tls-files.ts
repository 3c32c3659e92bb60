// Serving certificate and key from files that change under the process (a Secret volume updated by
// cert-manager or `dpg webhook certs`): polled, and swapped in only when the new pair is complete
// and matches, so a half-written update never replaces a working certificate.

import { readFileSync } from 'node:fs';
import { PemPairError, readPemPair } from '../crypto/x509.ts';

export interface TlsPair {
  readonly cert: string;
  readonly key: string;
  /** notAfter of the leaf, for the expiry metric. */
  readonly notAfter: Date;
}

/** Reads and checks a pair; the error says which file and why, never the key's content. */
export function readTlsPair(certFile: string, keyFile: string): TlsPair {
  try {
    const pair = readPemPair(certFile, keyFile);
    return { cert: pair.certPem, key: pair.keyPem, notAfter: new Date(pair.certificate.validTo) };
  } catch (err) {
    if (err instanceof PemPairError && err.part === 'certificate') throw new Error(`TLS certificate ${certFile} could not be read as a PEM certificate`, { cause: err });
    throw new Error(`TLS key ${keyFile} could not be read, or does not belong to ${certFile}`, { cause: err });
  }
}

export interface TlsWatcher {
  close(): void;
}

/**
 * Re-reads the pair every `intervalMs`; calls `onChange` with a new valid pair, `onError` when the
 * files changed but do not make a valid pair (the previous one stays in use).
 */
export function watchTlsPair(
  certFile: string,
  keyFile: string,
  current: TlsPair,
  intervalMs: number,
  onChange: (pair: TlsPair) => void,
  onError: (err: Error) => void,
): TlsWatcher {
  let last = `${current.cert}\u0000${current.key}`;
  let lastError = '';
  const timer = setInterval(() => {
    let cert: string;
    let key: string;
    try {
      cert = readFileSync(certFile, 'utf8');
      key = readFileSync(keyFile, 'utf8');
    } catch (err) {
      report(err as Error);
      return;
    }
    const now = `${cert}\u0000${key}`;
    if (now === last) return;
    try {
      const pair = readTlsPair(certFile, keyFile);
      last = `${pair.cert}\u0000${pair.key}`;
      lastError = '';
      onChange(pair);
    } catch (err) {
      report(err as Error);
    }
  }, intervalMs);
  timer.unref();
  function report(err: Error) {
    // Once per distinct problem, not every poll.
    if (err.message === lastError) return;
    lastError = err.message;
    onError(err);
  }
  return { close: () => clearInterval(timer) };
}
