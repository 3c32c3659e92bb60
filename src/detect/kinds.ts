// The kinds of personal data the content detector recognises, by the names manifests use.

export const DETECT_KINDS = ['card', 'email', 'phone', 'iban', 'ssn', 'ipAddress'] as const;
export type DetectKind = (typeof DETECT_KINDS)[number];

const byLowerName = new Map<string, DetectKind>(DETECT_KINDS.map((k) => [k.toLowerCase(), k]));

/** Accepts a kind name in any letter case (`ipaddress`, `IPADDRESS`); undefined when unknown. */
export function parseDetectKind(name: string): DetectKind | undefined {
  return byLowerName.get(name.toLowerCase());
}

/** One detected value inside a text: [start, end) and its kind. */
export interface DetectedSpan {
  readonly start: number;
  readonly end: number;
  readonly kind: DetectKind;
}
