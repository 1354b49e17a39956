import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import {
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
  readMultipart,
} from '@tapyard/core';
import { ObjectNotFoundError, ObjectStore, objectUri } from '@tapyard/objectstore';
import { SchemaSampleError, generateJsonSchema, generateXsd } from '@tapyard/schemas';
import { compileJsonSchema } from './json-schema-compile';
import { ConfigFileErrorCode } from './config-file-errors';

export { compileJsonSchema } from './json-schema-compile';

export const CONFIG_TYPES = ['validation-schema', 'javascript'] as const;
export type ConfigType = (typeof CONFIG_TYPES)[number];
export const SCHEMA_TYPES = ['json-schema', 'xsd'] as const;
export type SchemaType = (typeof SCHEMA_TYPES)[number];

/** Config files are small documents, so they are held in memory up to this size (413 beyond). */
export const CONFIG_FILE_LIMIT = 5 * 1024 * 1024;

const FILENAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const EXTENSIONS: Record<ConfigType, RegExp> = {
  'validation-schema': /\.(json|xsd)$/,
  javascript: /\.(js|mjs|cjs)$/,
};

export interface StoredConfigFile {
  filename: string;
  /** `s3://<env>-config/<type>/<filename>` */
  path: string;
}

/**
 * Configuration files of an environment (validation schemas, transformation scripts), kept at
 * `<env>-config/<type>/<filename>` in the object store, and JSON Schema / XSD generated from samples.
 */
@Injectable()
export class ConfigFilesService {
  constructor(private readonly store: ObjectStore) {}

  async upload(environment: string, req: Request): Promise<StoredConfigFile> {
    const { fields, file } = await readForm(req);
    const type = fields.get('type');
    if (!type)
      throw new ValidationError("multipart field 'type' is required (validation-schema or javascript)").coded(
        ConfigFileErrorCode.MissingField,
      );
    if (!(CONFIG_TYPES as readonly string[]).includes(type)) {
      throw new ValidationError(
        `type '${type.slice(0, 40)}' is unknown (one of ${CONFIG_TYPES.join(', ')})`,
      ).coded(ConfigFileErrorCode.UnknownType);
    }
    if (!file)
      throw new ValidationError("multipart field 'file' is required").coded(ConfigFileErrorCode.MissingField);
    const configType = type as ConfigType;
    checkFilename(file.name, configType);
    if (file.data.length === 0)
      throw new ValidationError(`the uploaded file '${file.name}' is empty`).coded(ConfigFileErrorCode.Empty);
    if (configType === 'validation-schema') checkSchemaFile(file.name, file.data);
    return this.save(environment, configType, file.name, file.data);
  }

  async generateSchema(
    environment: string,
    type: SchemaType,
    name: string,
    sampleData: string,
  ): Promise<StoredConfigFile & { schema: string }> {
    if (!FILENAME.test(name) || name.length > 100) {
      throw new ValidationError(
        `name '${name.slice(0, 60)}' is invalid: use letters, digits, '.', '_' and '-' (max 100)`,
      ).coded(ConfigFileErrorCode.InvalidName);
    }
    let schema: string;
    try {
      schema = type === 'json-schema' ? generateJsonSchema(name, sampleData) : generateXsd(name, sampleData);
    } catch (err) {
      if (err instanceof SchemaSampleError)
        throw new ValidationError(`sampleData: ${err.message}`).coded(ConfigFileErrorCode.InvalidSample);
      throw err;
    }
    const filename = `${name}${type === 'json-schema' ? '.json' : '.xsd'}`;
    const stored = await this.save(environment, 'validation-schema', filename, Buffer.from(schema, 'utf8'));
    return { ...stored, schema };
  }

  /** A stored validation schema's text (for the data-quality stage). */
  async readValidationSchema(environment: string, filename: string): Promise<string> {
    const bucket = await this.store.bucket(environment, 'config');
    return this.store
      .readText(bucket, `validation-schema/${filename}`, CONFIG_FILE_LIMIT)
      .catch((err: unknown) => {
        if (err instanceof ObjectNotFoundError) {
          throw new ValidationError(
            `validation schema '${filename}' does not exist in this environment`,
          ).coded(ConfigFileErrorCode.SchemaNotFound);
        }
        throw err;
      });
  }

  private async save(
    environment: string,
    type: ConfigType,
    filename: string,
    data: Buffer,
  ): Promise<StoredConfigFile> {
    const bucket = await this.store.bucket(environment, 'config');
    const key = `${type}/${filename}`;
    await this.store.put(bucket, key, data, contentType(filename));
    return { filename, path: objectUri(bucket, key) };
  }
}

function checkSchemaFile(filename: string, data: Buffer): void {
  const text = data.toString('utf8');
  if (filename.endsWith('.json')) compileJsonSchema(text, filename);
  else if (!/<(\w+:)?schema[\s>]/.test(text.slice(0, 4096))) {
    throw new ValidationError(
      `'${filename}' does not look like an XSD (no <xs:schema> element at the start)`,
    ).coded(ConfigFileErrorCode.InvalidSchema);
  }
}

function checkFilename(name: string, type: ConfigType): void {
  if (!FILENAME.test(name) || name.includes('..')) {
    throw new ValidationError(
      `file name '${name.slice(0, 80)}' is invalid: use letters, digits, '.', '_' and '-' (no paths)`,
    ).coded(ConfigFileErrorCode.InvalidName);
  }
  if (!EXTENSIONS[type].test(name)) {
    throw new UnsupportedMediaTypeError(
      `'${name}' is not a ${type} file (${type === 'javascript' ? '.js, .mjs or .cjs' : '.json or .xsd'})`,
    ).coded(ConfigFileErrorCode.WrongType);
  }
}

function contentType(filename: string): string {
  if (filename.endsWith('.json')) return 'application/schema+json';
  if (filename.endsWith('.xsd')) return 'application/xml';
  return 'text/javascript';
}

interface Form {
  fields: Map<string, string>;
  file: { name: string; data: Buffer } | null;
}

async function readForm(req: Request): Promise<Form> {
  const form: Form = { fields: new Map(), file: null };
  let tooLarge = false;
  await readMultipart(req, {
    notMultipart: "upload with Content-Type multipart/form-data and a 'file' part",
    limits: { files: 1, fields: 10, fieldSize: 1024, fileSize: CONFIG_FILE_LIMIT },
    onField: (name, value) => form.fields.set(name, value.trim()),
    onFile: ({ field, filename, stream }) => {
      if (field !== 'file' || form.file) return void stream.resume();
      const parts: Buffer[] = [];
      stream.on('data', (c: Buffer) => parts.push(c));
      stream.on('limit', () => (tooLarge = true));
      stream.on('end', () => (form.file = { name: filename.trim(), data: Buffer.concat(parts) }));
    },
  });
  if (tooLarge)
    throw new PayloadTooLargeError(`config files are limited to ${CONFIG_FILE_LIMIT} bytes`).coded(
      ConfigFileErrorCode.TooLarge,
    );
  return form;
}
