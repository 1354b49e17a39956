import { DECORATORS } from '@nestjs/swagger';
import { ValidationTypes, getMetadataStorage } from 'class-validator';

type Schema = Record<string, unknown>;

/**
 * The JSON Schema of a tool's arguments, generated from its DTO's class-validator metadata (types,
 * enums, bounds, patterns, optional) and @ApiProperty descriptions. A decorator it does not know
 * throws, so a DTO cannot be checked by a rule the model is not told about.
 */
export function toolSchema(args: new () => object): Schema {
  const properties: Record<string, Schema> = {};
  const optional = new Set<string>();
  const metas = getMetadataStorage().getTargetValidationMetadatas(args, '', true, false);
  for (const m of metas) {
    const p = (properties[m.propertyName] ??= {});
    if (m.type === ValidationTypes.CONDITIONAL_VALIDATION) {
      optional.add(m.propertyName);
      continue;
    }
    const c = (m.constraints ?? []) as unknown[];
    switch (m.type === ValidationTypes.CUSTOM_VALIDATION ? m.name : m.type) {
      case 'isString':
        p.type = 'string';
        break;
      case 'isInt':
        p.type = 'integer';
        break;
      case 'isObject':
        p.type = 'object';
        break;
      case 'isIn':
        p.type = 'string';
        p.enum = c[0];
        break;
      case 'min':
        p.minimum = c[0];
        break;
      case 'max':
        p.maximum = c[0];
        break;
      // Both refuse anything but a string.
      case 'maxLength':
        p.type = 'string';
        p.maxLength = c[0];
        break;
      case 'matches':
        p.type = 'string';
        p.pattern = (c[0] as RegExp).source;
        break;
      case 'isNotEmpty':
        // A blank string: "required" says as much to the model.
        break;
      default:
        throw new Error(
          `toolSchema: ${args.name}.${m.propertyName} uses a validator it cannot describe (${m.name ?? m.type})`,
        );
    }
  }
  for (const [name, p] of Object.entries(properties)) {
    const doc = Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, args.prototype, name) as
      { description?: string } | undefined;
    if (doc?.description) p.description = doc.description;
  }
  return {
    type: 'object',
    properties,
    required: Object.keys(properties).filter((name) => !optional.has(name)),
    additionalProperties: false,
  };
}
