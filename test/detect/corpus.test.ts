// Precision and recall of every detector over the labelled corpus (test/detect/corpus.ts). The
// figures are printed and recorded in docs/detection.md; card, email and IBAN must reach 0.99 both.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ContentScanner } from '../../src/detect/scanner.ts';
import { DETECT_KINDS, type DetectKind } from '../../src/detect/kinds.ts';
import { buildCorpus } from './corpus.ts';

interface Score {
  tp: number;
  fp: number;
  fn: number;
}

export function scoreCorpus(records = buildCorpus()): Map<DetectKind, Score> {
  const scanner = new ContentScanner(DETECT_KINDS);
  const scores = new Map<DetectKind, Score>(DETECT_KINDS.map((k) => [k, { tp: 0, fp: 0, fn: 0 }]));
  for (const record of records) {
    const found = scanner.scan(record.text);
    const key = (s: { start: number; end: number; kind: string }) => `${s.start}:${s.end}:${s.kind}`;
    const truth = new Set(record.spans.map(key));
    const seen = new Set(found.map(key));
    for (const s of found) scores.get(s.kind)![truth.has(key(s)) ? 'tp' : 'fp']++;
    for (const s of record.spans) if (!seen.has(key(s))) scores.get(s.kind)!.fn++;
  }
  return scores;
}

const precision = (s: Score) => (s.tp + s.fp === 0 ? 1 : s.tp / (s.tp + s.fp));
const recall = (s: Score) => (s.tp + s.fn === 0 ? 1 : s.tp / (s.tp + s.fn));

describe('detectors over the labelled corpus', () => {
  const records = buildCorpus();
  const scores = scoreCorpus(records);

  it('reports precision and recall per detector', () => {
    const lines = [`corpus: ${records.length} records, ${records.reduce((n, r) => n + r.spans.length, 0)} labelled values`];
    for (const [kind, s] of scores) {
      lines.push(`${kind.padEnd(10)} tp ${String(s.tp).padStart(4)}  fp ${String(s.fp).padStart(3)}  fn ${String(s.fn).padStart(3)}  precision ${precision(s).toFixed(4)}  recall ${recall(s).toFixed(4)}`);
    }
    console.log(lines.join('\n'));
    for (const s of scores.values()) assert.ok(s.tp > 100, 'every kind is well represented');
  });

  for (const kind of ['card', 'email', 'iban'] as const) {
    it(`${kind}: precision and recall >= 0.99`, () => {
      const s = scores.get(kind)!;
      assert.ok(precision(s) >= 0.99, `${kind} precision ${precision(s)}`);
      assert.ok(recall(s) >= 0.99, `${kind} recall ${recall(s)}`);
    });
  }

  it('phone, ssn and ipAddress: precision and recall >= 0.95', () => {
    for (const kind of ['phone', 'ssn', 'ipAddress'] as const) {
      const s = scores.get(kind)!;
      assert.ok(precision(s) >= 0.95 && recall(s) >= 0.95, `${kind} precision ${precision(s)} recall ${recall(s)}`);
    }
  });
});
