// A routed body protected as one document: decoded in its charset (body-charset.ts), protected with
// the phase's job, written back in the same encoding. One function for both places it runs — inline
// on the event loop for a light body, in a protection worker for a heavy one — so both give the same
// bytes.

import type { DataSetType, JobSpec, ProtectSummary } from '../../core/types.ts';
import type { Engine } from '../../engine/types.ts';
import { readBodyText } from '../reading/body-charset.ts';

export function protectDocumentBody(
  engine: Pick<Engine, 'protectDocument'>,
  job: JobSpec,
  body: Buffer,
  contentType: string | undefined,
  kind: DataSetType,
): { body: Buffer; summary: ProtectSummary } {
  const { text, encode } = readBodyText(body, kind, contentType);
  const result = engine.protectDocument(job, text);
  const data = result.dataSet;
  return { body: encode(typeof data === 'string' ? data : JSON.stringify(data)), summary: result.summary };
}
