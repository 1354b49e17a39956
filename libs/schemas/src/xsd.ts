import { SchemaSampleError } from './sample-error';
import { isCalendarDate, isDateTime } from './temporal';
import { parseXmlSample, XmlElement } from './xml-sample';

const MAX_CHILD_NAMES = 1000;

type XsdType = 'xs:integer' | 'xs:decimal' | 'xs:boolean' | 'xs:date' | 'xs:dateTime' | 'xs:string';

/** Most specific first, so the first type every value fits is the answer (integer+decimal → decimal). */
const CANDIDATE_TYPES: [XsdType, (value: string) => boolean][] = [
  ['xs:integer', (value) => /^[+-]?\d+$/.test(value)],
  ['xs:decimal', (value) => /^[+-]?(\d+\.?\d*|\.\d+)$/.test(value)],
  ['xs:boolean', (value) => value === 'true' || value === 'false'],
  ['xs:date', isCalendarDate],
  ['xs:dateTime', isDateTime],
];

/** Narrows the type of a text or attribute value as values are seen. */
class ValueTyper {
  private seen = false;
  private candidates = CANDIDATE_TYPES;

  add(value: string): void {
    this.seen = true;
    // XSD collapses whitespace around atomic values before checking them; an empty value fits only xs:string.
    const trimmed = value.trim();
    this.candidates = this.candidates.filter(([, fits]) => fits(trimmed));
  }

  type(): XsdType {
    return this.seen && this.candidates.length > 0 ? this.candidates[0][0] : 'xs:string';
  }
}

/** Every occurrence of one element name at one path, merged. */
interface ElementStats {
  occurrences: number;
  /** Child names in sequence order, and the index of each. */
  order: string[];
  position: Map<string, number>;
  children: Map<string, ChildStats>;
  /** Insertion order is the order of first appearance. */
  attributes: Map<string, AttributeStats>;
  text: ValueTyper;
  /** Some occurrence has non-whitespace text of its own. */
  hasText: boolean;
  /** Occurrences without any child element. */
  childless: number;
  /** Some occurrence orders its children against the others, so no xs:sequence fits them all. */
  orderConflict: boolean;
}

interface ChildStats {
  element: ElementStats;
  /** Occurrences of the parent that hold this child. */
  presentIn: number;
  /** It appears more than once in some occurrence of the parent. */
  repeated: boolean;
}

interface AttributeStats {
  presentIn: number;
  values: ValueTyper;
}

/**
 * Infers an XSD 1.0 schema from an XML sample: the root element, with nested anonymous complex
 * types merged over every occurrence of each element. Names lose their namespace prefixes, so the
 * schema has no target namespace. Throws SchemaSampleError for malformed XML or a DOCTYPE.
 */
export function generateXsd(name: string, sampleData: string): string {
  const root = parseXmlSample(sampleData);
  const stats = newElementStats();
  addOccurrence(stats, root);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">',
    '  <xs:annotation>',
    `    <xs:documentation>${escapeText(name)}</xs:documentation>`,
    '  </xs:annotation>',
    ...elementLines(root.name, stats, '', '  '),
    '</xs:schema>',
  ];
  return `${lines.join('\n')}\n`;
}

export { SchemaSampleError } from './sample-error';

function newElementStats(): ElementStats {
  return {
    occurrences: 0,
    order: [],
    position: new Map(),
    children: new Map(),
    attributes: new Map(),
    text: new ValueTyper(),
    hasText: false,
    childless: 0,
    orderConflict: false,
  };
}

function addOccurrence(stats: ElementStats, element: XmlElement): void {
  stats.occurrences++;
  stats.text.add(element.text);
  if (element.text.trim() !== '') stats.hasText = true;
  if (element.children.length === 0) stats.childless++;
  addAttributes(stats, element);
  mergeOrder(stats, element);
  const counts = new Map<string, number>();
  for (const child of element.children) {
    counts.set(child.name, (counts.get(child.name) ?? 0) + 1);
    addOccurrence(childStats(stats, child.name).element, child);
  }
  for (const [childName, count] of counts) {
    const child = childStats(stats, childName);
    child.presentIn++;
    if (count > 1) child.repeated = true;
  }
}

function childStats(stats: ElementStats, name: string): ChildStats {
  let child = stats.children.get(name);
  if (child === undefined) {
    child = { element: newElementStats(), presentIn: 0, repeated: false };
    stats.children.set(name, child);
  }
  return child;
}

function addAttributes(stats: ElementStats, element: XmlElement): void {
  // Two prefixed attributes can share a local name; count the name once per occurrence.
  const seen = new Set<string>();
  for (const [name, value] of element.attributes) {
    let attribute = stats.attributes.get(name);
    if (attribute === undefined) {
      attribute = { presentIn: 0, values: new ValueTyper() };
      stats.attributes.set(name, attribute);
    }
    if (!seen.has(name)) attribute.presentIn++;
    seen.add(name);
    attribute.values.add(value);
  }
}

/**
 * Adds the children's names to the sequence order. A new name goes as late as this occurrence
 * allows (right before the next already-known name, else at the end), so `a,b` then `a,c` then
 * `d,c` gives `a,b,d,c`, which fits all three. Flags a conflict when this occurrence cannot follow
 * the order (`b,a` after `a,b`, or `a,b,a`).
 */
function mergeOrder(stats: ElementStats, element: XmlElement): void {
  const names = element.children.map((child) => child.name);
  const nextKnown = nextKnownNames(names, stats.position);
  let last = -1;
  names.forEach((name, i) => {
    let index = stats.position.get(name);
    if (index === undefined) {
      const next = nextKnown[i];
      const before = next === undefined ? undefined : stats.position.get(next);
      index = Math.max(last + 1, before ?? stats.order.length);
      insertChildName(stats, element.name, name, index);
    } else if (index < last) {
      stats.orderConflict = true;
    }
    last = Math.max(last, index);
  });
}

/** For each position, the next name after it that was already known before this occurrence. */
function nextKnownNames(names: string[], known: Map<string, number>): (string | undefined)[] {
  const result: (string | undefined)[] = new Array<string | undefined>(names.length);
  let next: string | undefined;
  for (let i = names.length - 1; i >= 0; i--) {
    result[i] = next;
    if (known.has(names[i])) next = names[i];
  }
  return result;
}

function insertChildName(stats: ElementStats, parent: string, name: string, index: number): void {
  // Inserting is linear in the number of names; the bound keeps a hostile sample from making it quadratic.
  if (stats.order.length >= MAX_CHILD_NAMES) {
    throw new SchemaSampleError(
      `the element ${parent} has more than ${MAX_CHILD_NAMES} different child elements`,
    );
  }
  stats.order.splice(index, 0, name);
  for (let i = index; i < stats.order.length; i++) stats.position.set(stats.order[i], i);
}

function elementLines(name: string, stats: ElementStats, occurs: string, pad: string): string[] {
  const open = `${pad}<xs:element name="${name}"`;
  if (stats.children.size === 0 && stats.attributes.size === 0) {
    return [`${open} type="${stats.text.type()}"${occurs}/>`];
  }
  return [`${open}${occurs}>`, ...complexTypeLines(stats, `${pad}  `), `${pad}</xs:element>`];
}

function complexTypeLines(stats: ElementStats, pad: string): string[] {
  const inner = `${pad}  `;
  if (stats.children.size === 0 && stats.hasText) {
    return [
      `${pad}<xs:complexType>`,
      `${inner}<xs:simpleContent>`,
      `${inner}  <xs:extension base="${stats.text.type()}">`,
      ...attributeLines(stats, `${inner}    `),
      `${inner}  </xs:extension>`,
      `${inner}</xs:simpleContent>`,
      `${pad}</xs:complexType>`,
    ];
  }
  const mixed = stats.children.size > 0 && stats.hasText ? ' mixed="true"' : '';
  return [
    `${pad}<xs:complexType${mixed}>`,
    ...particleLines(stats, inner),
    ...attributeLines(stats, inner),
    `${pad}</xs:complexType>`,
  ];
}

/** The children as an xs:sequence, or, when their order varies, a repeated xs:choice that accepts any order. */
function particleLines(stats: ElementStats, pad: string): string[] {
  if (stats.children.size === 0) return [];
  const [group, groupOccurs] = stats.orderConflict
    ? ['xs:choice', `${stats.childless > 0 ? ' minOccurs="0"' : ''} maxOccurs="unbounded"`]
    : ['xs:sequence', ''];
  const children = stats.order.flatMap((name) => {
    const child = stats.children.get(name);
    if (child === undefined) throw new Error(`internal: no statistics for child ${name}`);
    const occurs = stats.orderConflict ? '' : occursOf(child, stats.occurrences);
    return elementLines(name, child.element, occurs, `${pad}  `);
  });
  return [`${pad}<${group}${groupOccurs}>`, ...children, `${pad}</${group}>`];
}

function occursOf(child: ChildStats, parentOccurrences: number): string {
  const min = child.presentIn < parentOccurrences ? ' minOccurs="0"' : '';
  const max = child.repeated ? ' maxOccurs="unbounded"' : '';
  return `${min}${max}`;
}

function attributeLines(stats: ElementStats, pad: string): string[] {
  return [...stats.attributes].map(([name, attribute]) => {
    const use = attribute.presentIn === stats.occurrences ? ' use="required"' : '';
    return `${pad}<xs:attribute name="${name}" type="${attribute.values.type()}"${use}/>`;
  });
}

function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
