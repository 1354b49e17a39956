import { generateXsd, SchemaSampleError } from './xsd';

const HEAD = [
  '<?xml version="1.0" encoding="UTF-8"?>',
  '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">',
  '  <xs:annotation>',
  '    <xs:documentation>t</xs:documentation>',
  '  </xs:annotation>',
];

/** The xs:element declarations for the root, with the schema wrapper checked and stripped. */
function body(sample: string): string[] {
  const lines = generateXsd('t', sample).split('\n');
  expect(lines.slice(0, HEAD.length)).toEqual(HEAD);
  expect(lines.slice(-2)).toEqual(['</xs:schema>', '']);
  return lines.slice(HEAD.length, -2).map((line) => line.slice(2));
}

/** The declaration line of the first element or attribute called `name`. */
function declaration(xsd: string[], name: string): string {
  const line = xsd.find((l) => l.includes(` name="${name}"`));
  if (line === undefined) throw new Error(`no declaration of ${name}`);
  return line.trim();
}

function errorOf(sample: string): SchemaSampleError {
  try {
    generateXsd('t', sample);
  } catch (err) {
    if (err instanceof SchemaSampleError) return err;
    throw err;
  }
  throw new Error('expected a SchemaSampleError');
}

describe('generateXsd', () => {
  it('describes a small nested document exactly', () => {
    const sample = [
      '<?xml version="1.0"?>',
      '<library>',
      '  <book id="1">',
      '    <title>Dune</title>',
      '    <year>1965</year>',
      '  </book>',
      '  <book id="2">',
      '    <title>Emma</title>',
      '  </book>',
      '</library>',
    ].join('\n');
    expect(generateXsd('books', sample)).toBe(
      [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">',
        '  <xs:annotation>',
        '    <xs:documentation>books</xs:documentation>',
        '  </xs:annotation>',
        '  <xs:element name="library">',
        '    <xs:complexType>',
        '      <xs:sequence>',
        '        <xs:element name="book" maxOccurs="unbounded">',
        '          <xs:complexType>',
        '            <xs:sequence>',
        '              <xs:element name="title" type="xs:string"/>',
        '              <xs:element name="year" type="xs:integer" minOccurs="0"/>',
        '            </xs:sequence>',
        '            <xs:attribute name="id" type="xs:integer" use="required"/>',
        '          </xs:complexType>',
        '        </xs:element>',
        '      </xs:sequence>',
        '    </xs:complexType>',
        '  </xs:element>',
        '</xs:schema>',
        '',
      ].join('\n'),
    );
  });

  it('marks children missing from some occurrence optional and repeated ones unbounded', () => {
    const xsd = body(
      '<r><item><a/><b>1</b><b>2</b></item><item><a/><c/></item><item><a/><b>3</b><c/></item></r>',
    );
    expect(declaration(xsd, 'item')).toBe('<xs:element name="item" maxOccurs="unbounded">');
    expect(declaration(xsd, 'a')).toBe('<xs:element name="a" type="xs:string"/>');
    expect(declaration(xsd, 'b')).toBe(
      '<xs:element name="b" type="xs:integer" minOccurs="0" maxOccurs="unbounded"/>',
    );
    expect(declaration(xsd, 'c')).toBe('<xs:element name="c" type="xs:string" minOccurs="0"/>');
  });

  it('orders a sequence so that every occurrence fits it', () => {
    const xsd = body('<r><x><a/><b/></x><x><a/><c/></x><x><d/><c/></x><x><a/><b/><c/></x></r>');
    const names = xsd.filter((l) => l.includes('<xs:element')).map((l) => /name="(\w+)"/.exec(l)?.[1]);
    expect(names).toEqual(['r', 'x', 'a', 'b', 'd', 'c']);
    expect(xsd.join('\n')).toContain('<xs:sequence>');
  });

  it('falls back to a repeated choice when the children come in conflicting orders', () => {
    const xsd = body('<r><x><a/><b/></x><x><b/><a/></x><x/></r>');
    expect(xsd.slice(3, 11)).toEqual([
      '      <xs:element name="x" maxOccurs="unbounded">',
      '        <xs:complexType>',
      '          <xs:choice minOccurs="0" maxOccurs="unbounded">',
      '            <xs:element name="a" type="xs:string"/>',
      '            <xs:element name="b" type="xs:string"/>',
      '          </xs:choice>',
      '        </xs:complexType>',
      '      </xs:element>',
    ]);
    expect(body('<r><a/><b/><a/></r>').join('\n')).toContain('<xs:choice maxOccurs="unbounded">');
  });

  it('makes attributes required only when every occurrence has them, in order of first appearance', () => {
    const xsd = body('<r><p id="1" kind="a"/><p lang="en" id="2"/><p id="3" kind="b" lang="fr"/></r>');
    expect(xsd.slice(3, 10)).toEqual([
      '      <xs:element name="p" maxOccurs="unbounded">',
      '        <xs:complexType>',
      '          <xs:attribute name="id" type="xs:integer" use="required"/>',
      '          <xs:attribute name="kind" type="xs:string"/>',
      '          <xs:attribute name="lang" type="xs:string"/>',
      '        </xs:complexType>',
      '      </xs:element>',
    ]);
  });

  it('puts attributes after the sequence', () => {
    const xsd = body('<r v="1.5"><a/></r>');
    expect(xsd).toEqual([
      '<xs:element name="r">',
      '  <xs:complexType>',
      '    <xs:sequence>',
      '      <xs:element name="a" type="xs:string"/>',
      '    </xs:sequence>',
      '    <xs:attribute name="v" type="xs:decimal" use="required"/>',
      '  </xs:complexType>',
      '</xs:element>',
    ]);
  });

  it('uses simpleContent for text with attributes', () => {
    const xsd = body('<r><price cur="EUR">9.50</price><price cur="USD">10</price></r>');
    expect(xsd.slice(3, 13)).toEqual([
      '      <xs:element name="price" maxOccurs="unbounded">',
      '        <xs:complexType>',
      '          <xs:simpleContent>',
      '            <xs:extension base="xs:decimal">',
      '              <xs:attribute name="cur" type="xs:string" use="required"/>',
      '            </xs:extension>',
      '          </xs:simpleContent>',
      '        </xs:complexType>',
      '      </xs:element>',
      '    </xs:sequence>',
    ]);
  });

  it('widens simpleContent to xs:string when some occurrence is empty', () => {
    const xsd = body('<r><price cur="EUR">9.50</price><price cur="USD"/></r>');
    expect(declaration(xsd, 'cur')).toBe('<xs:attribute name="cur" type="xs:string" use="required"/>');
    expect(xsd.join('\n')).toContain('<xs:extension base="xs:string">');
  });

  it('gives an element with attributes but never any text an empty complex type', () => {
    const xsd = body('<r><flag on="true"/><flag on="false">  </flag></r>');
    expect(xsd.slice(3, 8)).toEqual([
      '      <xs:element name="flag" maxOccurs="unbounded">',
      '        <xs:complexType>',
      '          <xs:attribute name="on" type="xs:boolean" use="required"/>',
      '        </xs:complexType>',
      '      </xs:element>',
    ]);
  });

  it('marks mixed content, including text seen in an occurrence without children', () => {
    const xsd = body('<r><note>Hello <b>world</b>!</note><note>plain</note></r>');
    expect(xsd.slice(3, 11)).toEqual([
      '      <xs:element name="note" maxOccurs="unbounded">',
      '        <xs:complexType mixed="true">',
      '          <xs:sequence>',
      '            <xs:element name="b" type="xs:string" minOccurs="0"/>',
      '          </xs:sequence>',
      '        </xs:complexType>',
      '      </xs:element>',
      '    </xs:sequence>',
    ]);
    expect(body('<r>\n  <a/>\n</r>').join('\n')).not.toContain('mixed');
  });

  it.each<[string[], string]>([
    [['1', '-2', '+30', ' 42 '], 'xs:integer'],
    [['1', '2.5', '-.5', '3.'], 'xs:decimal'],
    [['true', 'false'], 'xs:boolean'],
    [['true', 'True'], 'xs:string'],
    [['true', '1'], 'xs:string'],
    [['2024-02-29', '1999-12-31'], 'xs:date'],
    [['2024-02-29', '2023-02-29'], 'xs:string'],
    [['2024-01-05T10:00:00Z', '2024-01-05T10:00:00.25-05:00'], 'xs:dateTime'],
    [['2024-01-05T10:00:00'], 'xs:string'],
    [['2024-01-05', '2024-01-05T10:00:00Z'], 'xs:string'],
    [['1', 'abc'], 'xs:string'],
    [['1e3'], 'xs:string'],
    [['1', ''], 'xs:string'],
    [[''], 'xs:string'],
  ])('infers %j as %s for text and attributes', (values, type) => {
    const texts = body(`<r>${values.map((v) => `<v>${v}</v>`).join('')}</r>`);
    const occurs = values.length > 1 ? ' maxOccurs="unbounded"' : '';
    expect(declaration(texts, 'v')).toBe(`<xs:element name="v" type="${type}"${occurs}/>`);
    const attributes = body(`<r>${values.map((v) => `<e v="${v}"/>`).join('')}</r>`);
    expect(declaration(attributes, 'v')).toBe(`<xs:attribute name="v" type="${type}" use="required"/>`);
  });

  it('reads CDATA and entity references as text', () => {
    const xsd = body('<r><a><![CDATA[12]]></a><a>&#51;4</a><b>&lt;x&gt;</b></r>');
    expect(declaration(xsd, 'a')).toBe('<xs:element name="a" type="xs:integer" maxOccurs="unbounded"/>');
    expect(declaration(xsd, 'b')).toBe('<xs:element name="b" type="xs:string"/>');
  });

  it('keeps local names only and ignores namespace declarations', () => {
    const xsd = body(
      '<o:root xmlns:o="urn:o" xmlns="urn:d" xmlns:x="urn:x"><o:item x:id="1"/><item id="2" xml:lang="en"/></o:root>',
    );
    expect(xsd.join('\n')).not.toMatch(/xmlns|o:|x:/);
    expect(declaration(xsd, 'root')).toBe('<xs:element name="root">');
    expect(declaration(xsd, 'item')).toBe('<xs:element name="item" maxOccurs="unbounded">');
    expect(declaration(xsd, 'id')).toBe('<xs:attribute name="id" type="xs:integer" use="required"/>');
    expect(declaration(xsd, 'lang')).toBe('<xs:attribute name="lang" type="xs:string"/>');
  });

  it('describes a root with nothing in it as xs:string', () => {
    expect(body('<empty/>')).toEqual(['<xs:element name="empty" type="xs:string"/>']);
  });

  it('escapes the name in the documentation', () => {
    expect(generateXsd('a<b>&c', '<r/>')).toContain('<xs:documentation>a&lt;b&gt;&amp;c</xs:documentation>');
  });

  it('is deterministic: the same input gives byte-identical output', () => {
    const sample = '<r a="1"><x b="2024-01-05">t</x><y><z/><z/></y><x/></r>';
    expect(generateXsd('t', sample)).toBe(generateXsd('t', sample));
  });

  it.each<[string, string]>([
    ['an internal subset', '<!DOCTYPE r [<!ENTITY e "boom">]>\n<r>&e;</r>'],
    ['an external DTD', '<?xml version="1.0"?>\n<!DOCTYPE r SYSTEM "http://example.com/r.dtd">\n<r/>'],
    ['an unfinished DOCTYPE', '<!DOCTYPE r'],
    ['a DOCTYPE after the root', '<r/>\n<!DOCTYPE r>'],
  ])('refuses a DOCTYPE: %s', (_label, sample) => {
    expect(errorOf(sample).message).toBe(
      'the XML sample has a DOCTYPE, which is refused (no DTDs, no entity expansion)',
    );
  });

  it.each<[string, string, string]>([
    ['a mismatched close tag', '<r>\n  <a>\n</r>', 'invalid XML at line 3, column 4: Unexpected close tag'],
    ['an unclosed root', '<r>\n<a/>', 'invalid XML at line 2, column 4: Unclosed root tag'],
    ['text after the root', '<r/>\ntail', 'invalid XML at line 2, column 1: Text data outside of root node'],
    ['an HTML entity', '<r>&nbsp;</r>', 'invalid XML at line 1, column 9: Invalid character entity'],
    ['a second root', '<a/>\n<b/>', 'the XML sample has a second root element at line 2'],
    ['no root', '<?xml version="1.0"?>\n<!-- nothing -->', 'the XML sample has no root element'],
    ['an empty sample', '  \n ', 'the sample is empty'],
    [
      'over 1000 different children',
      `<r>${Array.from({ length: 1001 }, (_, i) => `<c${i}/>`).join('')}</r>`,
      'the element r has more than 1000 different child elements',
    ],
    [
      'nesting too deep',
      `${'<a>'.repeat(150)}${'</a>'.repeat(150)}`,
      'the sample nests deeper than 100 levels',
    ],
  ])('refuses %s', (_label, sample, message) => {
    expect(errorOf(sample).message).toBe(message);
  });
});
