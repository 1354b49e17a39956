import { IsEmail } from 'class-validator';
import { validateAs } from '@tapyard/core';
import { EnumArg, IntArg, NoArgs, ObjectArg, TextArg } from './tool-args';
import { toolSchema } from './tool-schema';

class Every {
  @TextArg('a name')
  name!: string;

  @TextArg('a note', { optional: true })
  note?: string;

  @IntArg('how many', { min: 0, max: 10, optional: true })
  count?: number;

  @EnumArg(['a', 'b'])
  kind!: 'a' | 'b';

  @ObjectArg('a body')
  body!: Record<string, unknown>;
}

class Unknown {
  @IsEmail()
  email!: string;
}

describe('toolSchema', () => {
  it('describes each argument shape: type, description, enum, bounds, and which are required', () => {
    expect(toolSchema(Every)).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', description: 'a name' },
        note: { type: 'string', description: 'a note' },
        count: { type: 'integer', minimum: 0, maximum: 10, description: 'how many' },
        kind: { type: 'string', enum: ['a', 'b'] },
        body: { type: 'object', description: 'a body' },
      },
      required: ['name', 'kind', 'body'],
      additionalProperties: false,
    });
  });

  it('gives a tool without arguments an empty closed object', () => {
    expect(toolSchema(NoArgs)).toEqual({
      type: 'object',
      properties: {},
      required: [],
      additionalProperties: false,
    });
  });

  it('refuses a validator it cannot describe, naming the DTO, the property and the validator', () => {
    expect(() => toolSchema(Unknown)).toThrow('Unknown.email uses a validator it cannot describe (isEmail)');
  });

  it('validates as it describes: strings trimmed, an optional blank one absent, a blank required one refused', async () => {
    const args = await validateAs(Every, { name: ' x ', note: '', kind: 'a', body: {} });
    expect(args).toMatchObject({ name: 'x', kind: 'a' });
    expect(args.note).toBeUndefined();
    await expect(validateAs(Every, { name: '  ', kind: 'a', body: {} })).rejects.toThrow(
      'invalid request: name should not be empty',
    );
    await expect(validateAs(Every, { name: 'x', kind: 'c', body: {}, count: 11 })).rejects.toMatchObject({
      status: 400,
      details: [
        { field: 'count', problem: 'must not be greater than 10' },
        { field: 'kind', problem: 'must be one of the following values: a, b' },
      ],
    });
  });
});
