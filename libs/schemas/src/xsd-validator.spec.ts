import { readdirSync } from 'node:fs';
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
    // Three calls of xmllint (2,000 records a call): each call's file names count from 0 again.
    const failing = new Set([0, 1999, 2000, 2001, 3999, 4000, 4499]);
    const records = Array.from({ length: 4500 }, (_, i) =>
      failing.has(i) ? { qty: '1' } : { '@sku': 'S', qty: String(i) },
    );
    const reasons = await v.check(records);
    const failed = reasons.flatMap((r, i) => (r === null ? [] : [i]));
    expect(failed).toEqual([...failing]);
    expect(reasons[4499]).toMatch(/sku/);
  });

  it("runs a validator's checks in one thread, ended once idle", async () => {
    const v = XsdRecordValidator.create(xsd, 'item', undefined, 200);
    expect(v.threadId).toBeNull();
    expect(await v.check([{ '@sku': 'C', qty: '5' }])).toEqual([null]);
    const first = v.threadId;
    expect(first).not.toBeNull();
    expect(await v.check([{ qty: '1' }])).toEqual([expect.stringMatching(/sku/)]);
    expect(v.threadId).toBe(first);
    for (let i = 0; i < 50 && v.threadId !== null; i++) await new Promise((r) => setTimeout(r, 50));
    expect(v.threadId).toBeNull();
    // The next check starts another.
    expect(await v.check([{ '@sku': 'C', qty: 'x' }])).toEqual([expect.stringMatching(/xs:integer/)]);
    expect(v.threadId).not.toBeNull();
    expect(v.threadId).not.toBe(first);
  });

  it("stops a check an XSD's backtracking pattern would hold for minutes, its xmllint worker with it", async () => {
    const costly =
      '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="row"><xs:simpleType>' +
      '<xs:restriction base="xs:string"><xs:pattern value="((a|aa)+)+b"/></xs:restriction>' +
      '</xs:simpleType></xs:element></xs:schema>';
    const threads = () => readdirSync('/proc/self/task').length;
    const before = threads();
    // About a second a value: 40 values would take some 40 s.
    const v = XsdRecordValidator.create(costly, 'row', () => 1500);
    const started = Date.now();
    await expect(
      v.check(Array.from({ length: 40 }, () => ({ '#text': `${'a'.repeat(60)}c` }))),
    ).rejects.toThrow(/the XSD took longer than 2 s to check 40 records/);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(v.threadId).toBeNull();
    // Its thread and xmllint's are gone (they would spin on for the rest of the values otherwise).
    for (let i = 0; i < 50 && threads() > before; i++) await new Promise((r) => setTimeout(r, 100));
    expect(threads()).toBeLessThanOrEqual(before);
    // An ordinary XSD still checks within its own deadline.
    expect(await XsdRecordValidator.create(xsd, 'item').check([{ '@sku': 'C', qty: '5' }])).toEqual([null]);
  }, 30_000);

  it('fails the check, not the record, when libxml2 gives up inside its own pattern checks', async () => {
    const costly =
      '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="row"><xs:simpleType>' +
      '<xs:restriction base="xs:string"><xs:pattern value="((a|aa)+)+b"/></xs:restriction>' +
      '</xs:simpleType></xs:element></xs:schema>';
    const v = XsdRecordValidator.create(costly, 'row');
    // The second value makes libxml2 give up (an "Internal error"), whether or not it matches.
    await expect(v.check([{ '#text': 'ab' }, { '#text': `${'a'.repeat(40)}c` }])).rejects.toThrow(
      'the XSD cannot be used: xmllint failed inside its checks of record 2 of the batch ' +
        '(xmlSchemaValidateFacets, validating against a pattern facet.); an xs:pattern that backtracks is the ' +
        'usual cause: simplify its patterns',
    );
    // Values it can check are answered as ever.
    expect(await v.check([{ '#text': 'ab' }, { '#text': 'x' }])).toEqual([
      null,
      expect.stringMatching(/The value 'x' is not accepted by the pattern/),
    ]);
  }, 30_000);

  it('refuses a schema it cannot use', () => {
    expect(() =>
      XsdRecordValidator.create('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>', 'item'),
    ).toThrow(/no global element/);
    expect(() => XsdRecordValidator.create('<xs:schema', 'item')).toThrow(/not well-formed/);
  });
});
