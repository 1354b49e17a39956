import { ValidationPipe } from '@nestjs/common';
import { IsString, getMetadataStorage } from 'class-validator';
import { TapyardConfig, ValidationError } from '@tapyard/core';
import { destinationDefaults } from './destination-confinement';
import { DestinationDto, DestinationSection, DestinationSections } from './destination-sections';
import { PipelineConfigDto } from './dto/pipeline-config.dto';
import { toDefinition } from './pipeline-definition';

const config = {
  environment: 'ops',
  database: { url: 'postgres://x@h/platform', name: 'platform', poolSize: 1 },
} as unknown as TapyardConfig;
const pipe = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true });

class PathDto {
  @IsString()
  path!: string;
}

/** A section no plug-in declares: the pipelines domain must take whatever it is given. */
function section(key: string): DestinationSection<PathDto, { path: string }> {
  return {
    key,
    dto: PathDto,
    description: `a ${key} section`,
    complete: (dto) => ({ path: dto.path }),
    confine: () => undefined,
    loadedBy: () => key,
  };
}

/** A body through the API's pipe, then into a definition with the sections an app registered. */
async function define(sections: DestinationSections, destination: unknown) {
  const body = {
    name: 'p',
    source: { schemaProperties: { fields: [{ name: 'a', type: 'int' }] } },
    destination,
  };
  const dto = (await pipe.transform(body, {
    type: 'body',
    metatype: PipelineConfigDto,
  })) as PipelineConfigDto;
  return toDefinition(dto, destinationDefaults(config, 'ops'), sections);
}

async function refusal(sections: DestinationSections, destination: unknown): Promise<ValidationError> {
  const err = await define(sections, destination).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ValidationError);
  return err as ValidationError;
}

describe('destination sections, as registered at boot', () => {
  it('validates and completes a destination with the sections it is given, no plug-in imported', async () => {
    const sections = new DestinationSections([section('files')]);
    expect((await define(sections, { files: { path: 'out' } })).destination).toEqual({
      files: { path: 'out' },
    });

    const wrong = await refusal(sections, { files: { path: 5, extra: true } });
    expect(wrong.details).toEqual([
      { field: 'destination.files.extra', problem: 'should not exist: the properties here are path' },
      { field: 'destination.files.path', problem: 'must be a string' },
    ]);
    expect(wrong.message).toBe(
      'invalid request: destination.files.extra should not exist: the properties here are path',
    );
    const misspelt = await refusal(sections, { files: { Path: 'out' } });
    expect(misspelt.details?.[0]).toEqual({
      field: 'destination.files.Path',
      problem: "should not exist (did you mean 'path'?): the properties here are path",
    });

    const unknown = await refusal(sections, { warehouse: { path: 'x' } });
    expect(unknown.details).toEqual([
      { field: 'destination.warehouse', problem: 'should not exist: the destination sections are files' },
    ]);
    const nearMiss = await refusal(sections, { Files: { path: 'x' } });
    expect(nearMiss.details).toEqual([
      {
        field: 'destination.Files',
        problem: "should not exist (did you mean 'files'?): the destination sections are files",
      },
    ]);
    // A null section means the same as leaving it out.
    for (const destination of [{}, { files: null }]) {
      const none = await refusal(sections, destination);
      expect(none.details).toEqual([{ field: 'destination', problem: 'needs at least one of: files' }]);
    }
  });

  it('lets two apps in one process register different sets', async () => {
    const a = new DestinationSections([section('files')]);
    const b = new DestinationSections([section('queue')]);
    expect((await define(a, { files: { path: 'x' } })).destination).toEqual({ files: { path: 'x' } });
    expect((await refusal(b, { files: { path: 'x' } })).message).toMatch(
      /destination.files should not exist/,
    );
    expect((await define(b, { queue: { path: 'y' } })).destination).toEqual({ queue: { path: 'y' } });
  });

  it('refuses two different sections under one key, and an empty set', () => {
    expect(() => new DestinationSections([section('files'), section('files')])).toThrow(/registered twice/);
    const one = section('files');
    expect(new DestinationSections([one, one]).all()).toEqual([one]);
    expect(() => new DestinationSections([])).toThrow(/no destination sections/);
  });

  it('lists the places of the sections that declare them, and none for those that do not', () => {
    const table: DestinationSection<PathDto, { path: string }> = {
      ...section('table'),
      locations: (t) => [{ store: 'postgres', database: 'd', schema: 's', name: t.path }],
    };
    const sections = new DestinationSections([section('files'), table]);
    const destination = { files: { path: 'out' }, table: { path: 'sales' }, writeMode: 'replace' as const };
    expect(sections.locationsOf(destination)).toEqual([
      { store: 'postgres', database: 'd', schema: 's', name: 'sales' },
    ]);
    expect(sections.locationsOf({ files: { path: 'out' }, table: null })).toEqual([]);
  });

  it('a body whose destination is missing or not an object is a 400, not a crash', async () => {
    const sections = new DestinationSections([section('files')]);
    for (const destination of [undefined, null, 'files', [{ path: 'x' }]]) {
      await expect(define(sections, destination)).rejects.toMatchObject({
        response: { message: ['destination must be an object'] },
      });
    }
  });
});

describe('importing the destination plug-ins', () => {
  it('decorates nothing and registers nothing', async () => {
    await import('@tapyard/destinations');
    const rules = getMetadataStorage().getTargetValidationMetadatas(DestinationDto, '', true, false);
    expect(rules).toEqual([]);
    expect(Reflect.getMetadata('swagger/apiModelPropertiesArray', DestinationDto.prototype)).toBeUndefined();
  });
});
