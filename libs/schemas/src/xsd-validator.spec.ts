import { generateXsd } from './xsd';
import { XsdRecordValidator } from './xsd-validator';

describe('XsdRecordValidator (libxml2 via WebAssembly)', () => {
  const xsd = generateXsd('feed', '<feed><item sku="A"><qty>2</qty></item><item sku="B"/></feed>');

  it('checks records wrapped in the schema root, one reason per record', async () => {
    const v = XsdRecordValidator.create(xsd, 'item');
    const reasons = await v.check([
      { '@sku': 'C', qty: '5' },
      { qty: '1' },
      { '@sku': 'D', qty: 'x' },
      { '@sku': 'E & <F>' },
    ]);
    expect(reasons[0]).toBeNull();
    expect(reasons[1]).toMatch(/attribute 'sku' is required/);
    expect(reasons[2]).toMatch(/'x' is not a valid value of the atomic type 'xs:integer'/);
    expect(reasons[3]).toBeNull();
  });

  it('checks a record alone when the XSD declares the record element globally, across several calls', async () => {
    const own = generateXsd('item', '<item sku="A"><qty>2</qty></item>');
    const v = XsdRecordValidator.create(own, 'item');
    const records = Array.from({ length: 1000 }, (_, i) =>
      i % 250 === 0 ? { qty: '1' } : { '@sku': 'S', qty: String(i) },
    );
    const reasons = await v.check(records);
    expect(reasons.filter((r) => r !== null)).toHaveLength(4);
    expect(reasons[250]).toMatch(/sku/);
  });

  it('refuses a schema it cannot use', () => {
    expect(() =>
      XsdRecordValidator.create('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>', 'item'),
    ).toThrow(/no global element/);
    expect(() => XsdRecordValidator.create('<xs:schema', 'item')).toThrow(/not well-formed/);
  });
});
