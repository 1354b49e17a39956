import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsObject, IsString, MaxLength, ValidateNested } from 'class-validator';
import { ValidationError } from '@tapyard/model';
import { validateAs } from './validate';

class Item {
  @IsIn(['int', 'string'])
  type!: string;
}

class Body {
  @IsString()
  @MaxLength(5)
  name!: string;

  @IsObject()
  @ValidateNested()
  @Type(() => Item)
  item!: Item;

  @IsArray()
  @ArrayMaxSize(2)
  @ValidateNested({ each: true })
  @Type(() => Item)
  items!: Item[];
}

async function refusal(value: unknown): Promise<ValidationError> {
  const err = await validateAs(Body, value).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ValidationError);
  return err as ValidationError;
}

const valid = { name: 'a', item: { type: 'int' }, items: [{ type: 'string' }] };

describe('validation problems, as every route and tool words them', () => {
  it('says a missing value is required, and names only the kind a wrong value must be', async () => {
    expect((await refusal({ ...valid, item: undefined, items: null })).details).toEqual([
      { field: 'item', problem: 'is required: must be an object' },
      { field: 'items', problem: 'is required: must be an array' },
    ]);
    expect((await refusal({ ...valid, name: 7, items: 'x' })).details).toEqual([
      { field: 'name', problem: 'must be a string' },
      { field: 'items', problem: 'must be an array' },
    ]);
    // Rules a present value of the right kind breaks are all named.
    expect((await refusal({ ...valid, name: 'toolong' })).message).toBe(
      'invalid request: name must be shorter than or equal to 5 characters',
    );
  });

  it('gives nested paths with indices, the valid values, and a near miss', async () => {
    const err = await refusal({ ...valid, items: [{ type: 'string' }, { type: 'Int' }, 5] });
    expect(err.details).toEqual([
      { field: 'items', problem: 'must contain no more than 2 elements' },
      {
        field: 'items[1].type',
        problem: "must be one of the following values: int, string (did you mean 'int'?)",
      },
      { field: 'items[2]', problem: 'must be an object' },
    ]);
    expect((await refusal({ ...valid, item: { type: 'int', tpye: 'x' } })).details).toEqual([
      {
        field: 'item.tpye',
        problem: "should not exist (did you mean 'type'?): the properties here are type",
      },
    ]);
  });
});
