import { Injectable } from '@nestjs/common';
import { ApiProperty, OmitType } from '@nestjs/swagger';
import { AssistantTool, AssistantToolSet, EnumArg, ToolSet, tool } from '@tapyard/assistant';
import { VectorStoreName } from '@tapyard/model';
import { SearchRequestDto } from './search-request.dto';
import { SearchService } from './search.service';

/** POST /search/{store}'s body (less `filter`, which the model is not offered), and the store. */
export class VectorSearchArgs extends OmitType(SearchRequestDto, ['filter'] as const) {
  @EnumArg(['qdrant', 'weaviate', 'pgvector', 'milvus', 'chroma'])
  store!: VectorStoreName;

  @ApiProperty({ description: 'what to look for' })
  declare query: string;

  @ApiProperty({ description: 'results (default 5)', required: false })
  declare topK?: number;

  @ApiProperty({ description: 'container (qdrant, milvus, chroma)', required: false })
  declare collection?: string;

  @ApiProperty({ description: 'weaviate class', required: false })
  declare className?: string;

  @ApiProperty({ description: 'pgvector table', required: false })
  declare table?: string;

  @ApiProperty({ description: 'pgvector schema', required: false })
  declare schema?: string;
}

@Injectable()
@AssistantToolSet()
export class VectorSearchTools implements ToolSet {
  constructor(private readonly search: SearchService) {}

  assistantTools(): AssistantTool[] {
    return [
      tool({
        name: 'vector_search',
        effect: 'read',
        description:
          'Similarity search over a vector store (qdrant, weaviate, pgvector, milvus, chroma). Container: collection (qdrant, milvus, chroma), className (weaviate), table + schema (pgvector).',
        args: VectorSearchArgs,
        run: async (ctx, { store, ...body }) => {
          const access = ctx.gate.check('vector_search', 'search:vector', 'none');
          return this.search.search(
            ctx.env,
            store,
            body,
            (collection) => access.permits('vector', 'search', { collection }),
            access.viewer.fullAccess,
          );
        },
      }),
    ];
  }
}
