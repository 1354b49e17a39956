import sax from 'sax';
import { MAX_SAMPLE_DEPTH, SchemaSampleError } from './sample-error';

/** One element of the sample, with prefixes dropped from its own and its attributes' names. */
export interface XmlElement {
  name: string;
  /** In document order; xmlns declarations left out. */
  attributes: [string, string][];
  children: XmlElement[];
  /** All its own text and CDATA, concatenated. */
  text: string;
}

export const XML_DOCTYPE_ERROR =
  'the XML sample has a DOCTYPE, which is refused (no DTDs, no entity expansion)';

/** The part of sax's parser state that the typings leave out. */
interface SaxInternals {
  doctype: unknown;
}

function localName(name: string): string {
  return name.slice(name.indexOf(':') + 1);
}

function isNamespaceDeclaration(name: string): boolean {
  return name === 'xmlns' || name.startsWith('xmlns:');
}

/** Parses the sample (strict XML, no DOCTYPE) into its root element. */
export function parseXmlSample(sampleData: string): XmlElement {
  const text = sampleData.replace(/^\uFEFF/, '');
  if (text.trim() === '') throw new SchemaSampleError('the sample is empty');
  // strictEntities: only the five XML entities, so HTML ones such as &nbsp; are errors.
  const options: sax.SAXOptions & { strictEntities: boolean } = { position: true, strictEntities: true };
  const parser = sax.parser(true, options);
  const open: XmlElement[] = [];
  let root = null as XmlElement | null;

  parser.onerror = (err) => {
    // An unfinished or misplaced DOCTYPE surfaces as a syntax error; report it as what it is.
    const doctype = (parser as unknown as SaxInternals).doctype;
    if (doctype === true || (typeof doctype === 'string' && doctype !== '') || /doctype/i.test(err.message)) {
      throw new SchemaSampleError(XML_DOCTYPE_ERROR);
    }
    const reason = err.message.split('\n')[0].replace(/\.$/, '');
    throw new SchemaSampleError(`invalid XML at line ${parser.line + 1}, column ${parser.column}: ${reason}`);
  };
  // Thrown before anything after the DOCTYPE is read, so none of it is ever used.
  parser.ondoctype = () => {
    throw new SchemaSampleError(XML_DOCTYPE_ERROR);
  };
  parser.onopentag = (tag) => {
    const element = toElement(tag as sax.Tag);
    const parent = open[open.length - 1];
    if (parent !== undefined) parent.children.push(element);
    else if (root === null) root = element;
    else throw new SchemaSampleError(`the XML sample has a second root element at line ${parser.line + 1}`);
    open.push(element);
    if (open.length > MAX_SAMPLE_DEPTH) {
      throw new SchemaSampleError(`the sample nests deeper than ${MAX_SAMPLE_DEPTH} levels`);
    }
  };
  parser.onclosetag = () => {
    open.pop();
  };
  parser.ontext = parser.oncdata = (chunk) => {
    const current = open[open.length - 1];
    if (current !== undefined) current.text += chunk;
  };

  parser.write(text).close();
  if (root === null) throw new SchemaSampleError('the XML sample has no root element');
  return root;
}

function toElement(tag: sax.Tag): XmlElement {
  const attributes: [string, string][] = Object.entries(tag.attributes)
    .filter(([name]) => !isNamespaceDeclaration(name))
    .map(([name, value]) => [localName(name), value]);
  return { name: localName(tag.name), attributes, children: [], text: '' };
}
