// Lays a (protected) XML document out as one table for CSV output: one row per child of the root
// (or of its single-child wrappers) when they repeat, else one row; columns are dotted paths.

import { DpgError } from '../../core/errors.ts';
import type { CodecOptions, FlatTable, Flattener } from '../codec.ts';
import { DEFAULT_XML_LIMITS, scanXml, type ElementFrame, type XmlEvents, type XmlLimits } from './scanner.ts';
import { decodeCharacterData, readLeafContent } from './text.ts';

/** The leading column naming each row's element when rows come from differently named elements. */
export const XML_ELEMENT_COLUMN = '_element';

interface XmlNode {
  readonly name: string;
  readonly attributes: [name: string, value: string][];
  readonly children: XmlNode[];
  /** Leaf elements: their value (as the codec reads it). Others: their own non-blank text, trimmed. */
  value: string;
  leaf: boolean;
}

/** Builds a small tree: names, attribute values and leaf values only. */
class TreeBuilder implements XmlEvents {
  root: XmlNode | undefined;
  private readonly open: XmlNode[] = [];
  private readonly input: string;

  constructor(input: string) {
    this.input = input;
  }

  openElement(element: ElementFrame): void {
    const node: XmlNode = {
      name: this.input.slice(element.localStart, element.nameEnd),
      attributes: [],
      children: [],
      value: '',
      leaf: true,
    };
    const parent = this.open[element.level - 2];
    if (parent === undefined) this.root = node;
    else parent.children.push(node);
    this.open[element.level - 1] = node;
  }

  attribute(
    element: ElementFrame,
    _leadStart: number,
    nameStart: number,
    localStart: number,
    nameEnd: number,
    valueStart: number,
    valueEnd: number,
  ): void {
    const input = this.input;
    const prefix = input.slice(nameStart, localStart);
    const name = input.slice(localStart, nameEnd);
    if (prefix === 'xmlns:' || (prefix === '' && name === 'xmlns')) return;
    const value = decodeCharacterData(input.slice(valueStart, valueEnd), true);
    this.open[element.level - 1].attributes.push([name, value]);
  }

  // Text is gathered for every element; a leaf's value is re-read whole when it closes.
  text(element: ElementFrame, start: number, end: number): void {
    const text = decodeCharacterData(this.input.slice(start, end), false).trim();
    if (text !== '') this.appendText(element, text);
  }

  cdata(element: ElementFrame, start: number, end: number): void {
    this.appendText(element, this.input.slice(start, end));
  }

  private appendText(element: ElementFrame, text: string): void {
    const node = this.open[element.level - 1];
    node.value = node.value === '' ? text : `${node.value} ${text}`;
  }

  closeElement(element: ElementFrame, endStart: number): void {
    const node = this.open[element.level - 1];
    if (element.hasChildElement) {
      node.leaf = false;
    } else if (!element.selfClosing) {
      node.value = readLeafContent(this.input, element.contentStart, endStart).value;
    }
  }
}

/** A flattener with its own limits (the default export uses DEFAULT_XML_LIMITS). */
export function createXmlFlattener(options: { readonly maxDepth?: number } = {}): Flattener {
  const limits: XmlLimits = { maxDepth: options.maxDepth ?? DEFAULT_XML_LIMITS.maxDepth };
  return (protectedDocument: string | unknown, _options: CodecOptions): FlatTable => {
    if (typeof protectedDocument !== 'string') {
      throw new DpgError('INVALID_REQUEST', 'An XML data set must be a string');
    }
    const builder = new TreeBuilder(protectedDocument);
    scanXml(protectedDocument, builder, limits);
    return flattenTree(builder.root as XmlNode);
  };
}

export const flattenXml: Flattener = createXmlFlattener();

/**
 * Rows are the children of the row container when it holds repeated children, else the whole
 * document is one row. The container is the root, or, through wrappers that hold nothing but one
 * child element (`<soap:Envelope><soap:Body><customers>`), the first element that holds more.
 */
function rowElementsOf(root: XmlNode): XmlNode[] {
  let container = root;
  while (container.children.length === 1 && container.attributes.length === 0 && container.value === '') {
    container = container.children[0];
  }
  return hasRepeatedChild(container) ? container.children : [root];
}

function flattenTree(root: XmlNode): FlatTable {
  const rowElements = rowElementsOf(root);
  const columns: string[] = [];
  const columnIndex = new Map<string, number>();
  const distinctNames = new Set(rowElements.map((node) => node.name));
  const nameColumn = distinctNames.size > 1;
  if (nameColumn) {
    columns.push(XML_ELEMENT_COLUMN);
    columnIndex.set(XML_ELEMENT_COLUMN, 0);
  }

  // Children that repeat under some instance of their parent get an index in every row, so one
  // path keeps one column however many times it happens to occur in a given row.
  const repeating = new Set<string>();
  for (const node of rowElements) collectRepeating(node, '', repeating);

  const rows: string[][] = [];
  for (const node of rowElements) {
    const row: string[] = [];
    if (nameColumn) row[0] = node.name;
    const put = (column: string, value: string): void => {
      let index = columnIndex.get(column);
      if (index === undefined) {
        index = columns.length;
        columns.push(column);
        columnIndex.set(column, index);
      }
      row[index] = value;
    };
    emitNode(node, '', '', node.name, repeating, put);
    rows.push(row);
  }
  for (const row of rows) {
    for (let i = 0; i < columns.length; i++) row[i] ??= '';
  }
  return { columns, rows };
}

function hasRepeatedChild(node: XmlNode): boolean {
  const seen = new Set<string>();
  for (const child of node.children) {
    if (seen.has(child.name)) return true;
    seen.add(child.name);
  }
  return false;
}

function join(prefix: string, segment: string): string {
  return prefix === '' ? segment : `${prefix}.${segment}`;
}

function collectRepeating(node: XmlNode, key: string, repeating: Set<string>): void {
  const counts = new Map<string, number>();
  for (const child of node.children) counts.set(child.name, (counts.get(child.name) ?? 0) + 1);
  for (const [name, count] of counts) if (count > 1) repeating.add(join(key, name));
  for (const child of node.children) collectRepeating(child, join(key, child.name), repeating);
}

/**
 * Writes a node's cells. `column` is its column path (with indices), `key` the same without
 * indices; the row element itself has both empty, and names its own value column `ownName`.
 */
function emitNode(
  node: XmlNode,
  column: string,
  key: string,
  ownName: string,
  repeating: ReadonlySet<string>,
  put: (column: string, value: string) => void,
): void {
  for (const [name, value] of node.attributes) put(join(column, `@${name}`), value);
  if (node.leaf || node.value !== '') put(column === '' ? ownName : column, node.value);
  const seen = new Map<string, number>();
  for (const child of node.children) {
    const childKey = join(key, child.name);
    let childColumn = join(column, child.name);
    if (repeating.has(childKey)) {
      const index = seen.get(child.name) ?? 0;
      seen.set(child.name, index + 1);
      childColumn = `${childColumn}.${index}`;
    }
    emitNode(child, childColumn, childKey, child.name, repeating, put);
  }
}
