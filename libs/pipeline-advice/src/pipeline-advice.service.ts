import { Inject, Injectable, ValidationPipe } from '@nestjs/common';
import { Logger } from 'pino';
import { AiService } from '@tapyard/ai';
import { CONFIG, LOGGER, TapyardConfig, TapyardError, errorMessage } from '@tapyard/core';
import { DataQualityRule, SchemaField } from '@tapyard/model';
import {
  PipelineConfigDto,
  destinationDefaults,
  toDefinition,
  DestinationSections,
} from '@tapyard/pipelines';
import { looksSensitive, type DataProfile } from '@tapyard/profiling';

/** Column names whose values never go to the model (names and types still do). */

export interface FieldAdvice {
  name: string;
  description: string;
  /** A semantic hint such as "email", "currency", "country code"; never a type change. */
  hint: string | null;
}

export type GenerateAdvice = { model: string; fields: FieldAdvice[] } | { error: string };

export type ProfileAdvice =
  | {
      model: string;
      recommendations: string[];
      suggestedRules: DataQualityRule[];
      /** Rules the model proposed that the pipeline rule schema refused, with the reason. */
      refusedRules: { rule: unknown; reason: string }[];
    }
  | { error: string };

const FIELDS_SCHEMA = {
  type: 'object',
  required: ['fields'],
  properties: {
    fields: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'description'],
        properties: {
          name: { type: 'string' },
          description: { type: 'string' },
          hint: { type: ['string', 'null'] },
        },
      },
    },
  },
};
const PROFILE_SCHEMA = {
  type: 'object',
  required: ['recommendations', 'rules'],
  properties: {
    recommendations: { type: 'array', items: { type: 'string' } },
    rules: { type: 'array', items: { type: 'object' } },
  },
};

const pipe = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true });

/**
 * Model advice next to the deterministic results of /pipeline/generate and /pipeline/profile: the
 * inferred types stay the authority (advice never changes one); suggested rules are kept only when
 * the pipeline rule schema accepts them against the inferred schema. Without a provider: nothing.
 */
@Injectable()
export class PipelineAdviceService {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly ai: AiService,
    private readonly sections: DestinationSections,
  ) {}

  async forGenerate(
    env: string,
    fields: SchemaField[],
    examples: string[][],
    signal?: AbortSignal,
  ): Promise<GenerateAdvice | undefined> {
    const model = await this.ai.optionalModel(env, 'advice');
    if (!model) return undefined;
    const columns = fields.map((f, i) => {
      const values = looksSensitive(f.name)
        ? []
        : examples.map((r) => (r[i] ?? '').slice(0, 40)).filter((v) => v !== '');
      return `${f.name} (${f.type})${values.length ? `: ${values.map((v) => JSON.stringify(v)).join(', ')}` : ''}`;
    });
    try {
      const answer = await model.json<{ fields: FieldAdvice[] }>({
        name: 'field_advice',
        schema: FIELDS_SCHEMA,
        system:
          'For each column of a data file, write a one-sentence description and, when the values show it, a semantic ' +
          'hint (email, url, currency amount, ISO country code, identifier, timestamp, ...), else null. Do not propose ' +
          'types. Answer with one JSON object: {"fields": [{"name", "description", "hint"}]}.',
        messages: [{ role: 'user', content: columns.join('\n').slice(0, 20_000) }],
        signal,
      });
      const known = new Set(fields.map((f) => f.name));
      return {
        model: model.model,
        fields: answer.fields
          .filter((f) => known.has(f.name))
          .map((f) => ({
            name: f.name,
            description: f.description.slice(0, 500),
            hint: f.hint ? f.hint.slice(0, 100) : null,
          })),
      };
    } catch (err) {
      return { error: this.failed(err) };
    }
  }

  async forProfile(
    env: string,
    profile: DataProfile,
    signal?: AbortSignal,
  ): Promise<ProfileAdvice | undefined> {
    const model = await this.ai.optionalModel(env, 'advice');
    if (!model) return undefined;
    const lines = profile.columns.map((c) => {
      const values = looksSensitive(c.name)
        ? ''
        : ` top values ${c.topValues
            .slice(0, 3)
            .map((t) => JSON.stringify(t.value.slice(0, 40)))
            .join(', ')}`;
      const range = looksSensitive(c.name)
        ? ''
        : ` min ${JSON.stringify(c.min)} max ${JSON.stringify(c.max)}`;
      return `${c.name} (${c.inferredType}): null rate ${c.nullRate}, ${c.distinctCount} distinct,${range}${values}`;
    });
    try {
      const answer = await model.json<{ recommendations: string[]; rules: unknown[] }>({
        name: 'profile_advice',
        schema: PROFILE_SCHEMA,
        system:
          'You review a data profile. Give at most five short recommendations the statistics do not already state, and ' +
          'data-quality rules worth enforcing. Rules are objects {type, column, ...}: type not_null | unique | range ' +
          '(min and/or max) | regex (pattern, JavaScript syntax) | allowed_values (values: [string]) | type_conformance. ' +
          'Answer with one JSON object: {"recommendations": [string], "rules": [object]}.',
        messages: [
          {
            role: 'user',
            content:
              `${profile.rowCount} rows sampled. Issues found: ${profile.issues.map((i) => i.message).join(' | ') || 'none'}\n` +
              lines.join('\n').slice(0, 20_000),
          },
        ],
        signal,
      });
      const fields: SchemaField[] = profile.columns.map((c) => ({ name: c.name, type: c.inferredType }));
      const suggestedRules: DataQualityRule[] = [];
      const refusedRules: { rule: unknown; reason: string }[] = [];
      for (const rule of answer.rules.slice(0, 50)) {
        const checked = await this.checkRule(env, fields, rule);
        if (typeof checked === 'string') refusedRules.push({ rule, reason: checked });
        else suggestedRules.push(checked);
      }
      return {
        model: model.model,
        recommendations: answer.recommendations.slice(0, 5).map((r) => r.slice(0, 500)),
        suggestedRules,
        refusedRules,
      };
    } catch (err) {
      return { error: this.failed(err) };
    }
  }

  /** The rule as the pipeline would store it, or why the pipeline rule schema refuses it. */
  private async checkRule(
    env: string,
    fields: SchemaField[],
    rule: unknown,
  ): Promise<DataQualityRule | string> {
    const config = {
      name: 'advice_check',
      source: { fileAttributes: { format: 'csv' }, schemaProperties: { fields } },
      dataQuality: { rules: [rule] },
      destination: { database: { table: 'advice_check' } },
    };
    try {
      const dto = (await pipe.transform(config, {
        type: 'body',
        metatype: PipelineConfigDto,
      })) as PipelineConfigDto;
      return toDefinition(dto, destinationDefaults(this.config, env), this.sections).dataQuality.rules[0];
    } catch (err) {
      const body = (err as { getResponse?: () => { message?: string | string[] } }).getResponse?.();
      if (body?.message) return Array.isArray(body.message) ? body.message.join('; ') : body.message;
      return errorMessage(err);
    }
  }

  private failed(err: unknown): string {
    this.logger.warn({ reason: errorMessage(err) }, 'no AI advice: the model could not be asked');
    return err instanceof TapyardError ? err.message : 'the model could not be asked';
  }
}
