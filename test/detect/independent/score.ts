// Strict scoring of a scanner over labelled texts: a found span counts only when its start, end and
// kind are exactly a label's.

import type { ContentScanner } from '../../../src/detect/scanner.ts';
import { DETECT_KINDS, type DetectKind } from '../../../src/detect/kinds.ts';
import type { LabelledText } from './generate.ts';

export interface Score {
  tp: number;
  fp: number;
  fn: number;
}

export interface Miss {
  readonly text: string;
  readonly value: string;
  readonly kind: DetectKind;
  readonly what: 'fp' | 'fn';
}

export function score(scanner: ContentScanner, records: readonly LabelledText[]): { scores: Map<DetectKind, Score>; misses: Miss[] } {
  const scores = new Map<DetectKind, Score>(DETECT_KINDS.map((k) => [k, { tp: 0, fp: 0, fn: 0 }]));
  const misses: Miss[] = [];
  const key = (s: { start: number; end: number; kind: string }) => `${s.start}:${s.end}:${s.kind}`;
  for (const record of records) {
    const found = scanner.scan(record.text);
    const truth = new Set(record.spans.map(key));
    const seen = new Set(found.map(key));
    for (const s of found) {
      const hit = truth.has(key(s));
      scores.get(s.kind)![hit ? 'tp' : 'fp']++;
      if (!hit) misses.push({ text: record.text, value: record.text.slice(s.start, s.end), kind: s.kind, what: 'fp' });
    }
    for (const s of record.spans) {
      if (seen.has(key(s))) continue;
      scores.get(s.kind)!.fn++;
      misses.push({ text: record.text, value: record.text.slice(s.start, s.end), kind: s.kind, what: 'fn' });
    }
  }
  return { scores, misses };
}

export const precision = (s: Score): number => (s.tp + s.fp === 0 ? 1 : s.tp / (s.tp + s.fp));
export const recall = (s: Score): number => (s.tp + s.fn === 0 ? 1 : s.tp / (s.tp + s.fn));

export function table(scores: Map<DetectKind, Score>): string {
  const lines = ['| kind | labelled | true positives | false positives | missed | precision | recall |', '|---|---|---|---|---|---|---|'];
  for (const [kind, s] of scores) {
    lines.push(`| ${kind} | ${s.tp + s.fn} | ${s.tp} | ${s.fp} | ${s.fn} | ${precision(s).toFixed(4)} | ${recall(s).toFixed(4)} |`);
  }
  return lines.join('\n');
}
