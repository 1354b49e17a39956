import { cellText, configOf, confirmsDeletion, formOf, formProblems } from './pipeline-form';

const proposal = {
  name: 'fruit_sample',
  source: {
    fileAttributes: { csvAttributes: { delimiter: ',', header: true } },
    schemaProperties: {
      fields: [
        { name: 'id', type: 'int' as const },
        { name: 'price', type: 'decimal' as const, precision: 6, scale: 2 },
      ],
    },
  },
  dataQuality: { rules: [{ type: 'not_null', field: 'id' }] },
  destination: { database: { schema: 'public', table: 'fruit_sample' } },
  typeNotes: [{ column: 'id', type: 'int', reason: 'r', outliers: 1, examples: ['x'] }],
};

describe('the pipeline form', () => {
  it('edits columns, name and table, and keeps every part of the configuration it does not show', () => {
    const form = formOf(proposal);
    expect(form).toEqual({
      name: 'fruit_sample',
      catalog: '',
      table: 'fruit_sample',
      columns: proposal.source.schemaProperties.fields,
    });
    form.columns[0] = { ...form.columns[0], name: 'fruit_id', type: 'bigint' };
    form.columns[1] = { ...form.columns[1], type: 'double' };
    form.table = 'fruit';
    form.catalog = ' shop ';
    const body = configOf(proposal, form);
    expect(body).toEqual({
      name: 'fruit_sample',
      catalog: 'shop',
      source: {
        fileAttributes: { csvAttributes: { delimiter: ',', header: true } },
        schemaProperties: {
          fields: [
            { name: 'fruit_id', type: 'bigint' },
            { name: 'price', type: 'double' },
          ],
        },
      },
      dataQuality: { rules: [{ type: 'not_null', field: 'id' }] },
      destination: { database: { schema: 'public', table: 'fruit' } },
    });
  });

  it('drops what GET /pipeline adds (version, updatedAt), and an empty catalog is none', () => {
    const body = configOf(
      { ...proposal, version: 3, updatedAt: 'x', catalog: 'c' },
      {
        ...formOf(proposal),
        catalog: '',
      },
    );
    expect(body).not.toHaveProperty('version');
    expect(body).not.toHaveProperty('updatedAt');
    expect(body.catalog).toBeNull();
  });

  it('names what stops the form: no name, no columns, a nameless or repeated column', () => {
    expect(formProblems(formOf(proposal))).toEqual([]);
    expect(formProblems({ name: ' ', catalog: '', table: '', columns: [] })).toEqual([
      'The pipeline needs a name.',
      'The schema needs at least one column.',
    ]);
    expect(
      formProblems({
        name: 'p',
        catalog: '',
        table: 't',
        columns: [
          { name: 'Id', type: 'int' },
          { name: '', type: 'int' },
          { name: 'id', type: 'string' },
        ],
      }),
    ).toEqual(['Column 2 has no name.', "Column 'id' appears twice."]);
  });

  it('confirms a deletion only with the exact name typed', () => {
    expect(confirmsDeletion('sales', 'sales')).toBe(true);
    expect(confirmsDeletion('Sales', 'sales')).toBe(false);
    expect(confirmsDeletion('sales ', 'sales')).toBe(false);
    expect(confirmsDeletion('', 'sales')).toBe(false);
  });

  it('shows loaded values as cells', () => {
    expect(cellText('a')).toBe('a');
    expect(cellText(null)).toBe('∅');
    expect(cellText(3)).toBe('3');
    expect(cellText(true)).toBe('true');
    expect(cellText({ a: 1 })).toBe('{"a":1}');
  });
});
