// XML codec: customer records as elements (some as attributes, some in CDATA, with comments and a
// namespace prefix), damaged ones and raw hostile text, through the engine.

import { XMLParser } from 'fast-xml-parser';
import { KnownIssue, type FuzzTarget } from '../harness.ts';
import { checkDocument, documentArb, type DocumentInput, type Row } from './documents.ts';

const reader = new XMLParser({ ignoreAttributes: false, processEntities: true, htmlEntities: false, commentPropName: '#comment', cdataPropName: '#cdata' });
/**
 * Reported in docs/reliability.md "Fuzzing". Characters a rule leaves as they were keep their
 * writing (issue 17); a value Encrypt replaces whole by a token holds no writing, so Decrypt
 * writes it in the codec's own escaping.
 */
export const ESCAPING_CANONICAL = 'a value Encrypt rewrote whole comes back from Decrypt in the codec\'s own escaping (a raw `>` as `&gt;`): the same document to a parser, not the same bytes';

/** The same document to an independent parser, after Encrypt → Decrypt: the known escaping class. */
function sameToAParser(text: string): (back: string, forward: 'Pseudonymise' | 'Encrypt') => string {
  return (back, forward) => {
    let same = false;
    try {
      same = forward === 'Encrypt' && JSON.stringify(reader.parse(back)) === JSON.stringify(reader.parse(text));
    } catch {
      same = false;
    }
    if (same) throw new KnownIssue(ESCAPING_CANONICAL);
    return text;
  };
}

const esc = (v: string): string => v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function writeXml(rows: readonly Row[]): string {
  const body = rows
    .map((row, r) => {
      const prefix = r % 2 === 1 ? 'c:' : '';
      const inner = row
        .map((f, i) => {
          const content = i % 3 === 1 && !f.value.includes(']]>') ? `<![CDATA[${f.value}]]>` : esc(f.value);
          return `<${prefix}${f.name}${i % 4 === 2 ? ' kind="x"' : ''}>${content}</${prefix}${f.name}>${i % 5 === 3 ? '<!-- c -->' : ''}`;
        })
        .join(r % 2 === 0 ? '\n  ' : '');
      return `<${prefix}customer id="${r}">${inner}</${prefix}customer>`;
    })
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<customers xmlns:c="urn:c">\n${body}\n</customers>\n`;
}

export const xmlTarget: FuzzTarget<DocumentInput> = {
  name: 'xml',
  covers: 'XML codec (src/formats/xml) through the engine: Mask, Pseudonymise→Reconstruct, Encrypt→Decrypt',
  arbitrary: documentArb(writeXml),
  check: (input) => checkDocument('XML', input, undefined, sameToAParser(input.text)),
  cost: 4,
};

export default xmlTarget;
