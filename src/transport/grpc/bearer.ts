// Reads the caller's token from `authorization: Bearer <token>` call metadata.

import type { Metadata } from '@grpc/grpc-js';
import { DpgError } from '../../core/errors.ts';

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;

/** The raw token; throws UNAUTHENTICATED when the entry is missing, repeated or not a bearer token. */
export function bearerToken(metadata: Metadata): string {
  const values = metadata.get('authorization');
  if (values.length === 0) throw new DpgError('UNAUTHENTICATED', 'Missing authorization metadata (Bearer token)');
  if (values.length > 1) throw new DpgError('UNAUTHENTICATED', 'More than one authorization metadata entry');
  const value = values[0];
  const match = typeof value === 'string' ? BEARER.exec(value) : null;
  if (match === null) throw new DpgError('UNAUTHENTICATED', 'Authorization metadata must be "Bearer <token>"');
  return match[1];
}
