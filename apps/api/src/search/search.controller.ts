import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { VECTOR_STORES } from '@tapyard/model';
import { SearchRequestDto, SearchService, VectorStoresService } from '@tapyard/vector-stores';
import { Access } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { ApiErrors } from '../http/api-errors.decorator';
import { SearchResponseDto } from './search.dto';

@ApiTags('search')
@Controller('search')
export class SearchController {
  constructor(private readonly search: SearchService) {}

  @Post(':store')
  @HttpCode(200)
  @Requires('search:vector', 'in-handler')
  @ApiOperation({
    summary: 'Similarity search over a vector store',
    description:
      "Embeds `query` with the environment's embedding model (the secret `embedding`, or the built-in offline model) and " +
      'returns the `topK` most similar chunks passing `filter`, best first. The container field depends on the store: ' +
      'Qdrant, Milvus and Chroma `collection`; Weaviate `className` (default `Documents`); pgvector `table` and `schema` ' +
      "(default `public`; a tenant's own schema `t_<tenant>` in multi-tenant mode, and no other: a schema its pipelines " +
      'could not load into, or a platform schema, is 400). `_score` is (1 + cosine similarity) / 2 in every store. ' +
      'A container filled by another embedding model or dimension answers 400 with a text/plain message. ' +
      'Needs `search:vector` on the container ' +
      '(`search:vector:collection=<container>`).',
  })
  @ApiParam({ name: 'store', enum: VECTOR_STORES })
  @ApiOkResponse({ type: SearchResponseDto })
  @ApiErrors({
    400: "Unknown store (names the valid ones), missing container field, a pgvector schema outside the caller's confinement, bad filter; text/plain for a model or dimension mismatch",
    404: 'No such container (or not visible to the caller)',
    503: 'The store is not configured or unreachable',
  })
  run(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('store') storeParam: string,
    @Body() body: SearchRequestDto,
  ): Promise<SearchResponseDto> {
    const store = VectorStoresService.checkName(storeParam);
    return this.search.search(
      env,
      store,
      body,
      (collection) => access.permits('vector', 'search', { collection }),
      access.viewer.fullAccess,
    );
  }
}
