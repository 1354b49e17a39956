import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import { ValidationError } from '@tapyard/core';
import { VECTOR_STORES, VectorStoreName } from '@tapyard/pipelines';
import { SearchService, VectorStoresService } from '@tapyard/vector-stores';
import { Access } from '../auth/access';
import { Requires } from '../auth/access-rule';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { ErrorBodyDto } from '../http/error-body.dto';
import { SearchRequestDto, SearchResponseDto } from './search.dto';

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
      '(default `public`). `_score` is (1 + cosine similarity) / 2 in every store. A container filled by another embedding ' +
      'model or dimension answers 400 with a text/plain message. Needs `search:vector` on the container ' +
      '(`search:vector:collection=<container>`).',
  })
  @ApiParam({ name: 'store', enum: VECTOR_STORES })
  @ApiOkResponse({ type: SearchResponseDto })
  @ApiBadRequestResponse({
    type: ErrorBodyDto,
    description:
      'Unknown store (names the valid ones), missing container field, bad filter; text/plain for a model or dimension mismatch',
  })
  @ApiNotFoundResponse({
    type: ErrorBodyDto,
    description: 'No such container (or not visible to the caller)',
  })
  @ApiServiceUnavailableResponse({
    type: ErrorBodyDto,
    description: 'The store is not configured or unreachable',
  })
  run(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('store') storeParam: string,
    @Body() body: SearchRequestDto,
  ): Promise<SearchResponseDto> {
    const store = VectorStoresService.checkName(storeParam);
    const { scope, container } = containerOf(store, body);
    access.assertVisible('vector', 'search', { collection: scope }, `${store} has no container '${scope}'`);
    return this.search.search(env, store, {
      query: body.query,
      topK: body.topK ?? 5,
      filter: body.filter,
      container,
    });
  }
}

/** The store's container field (spec), as the store names it and as capabilities scope it. */
export function containerOf(
  store: VectorStoreName,
  body: SearchRequestDto,
): { scope: string; container: string } {
  switch (store) {
    case 'weaviate': {
      const c = body.className ?? 'Documents';
      return { scope: c, container: c };
    }
    case 'pgvector': {
      if (!body.table) throw new ValidationError("pgvector search needs 'table' (and optionally 'schema')");
      return { scope: body.table, container: `${body.schema ?? 'public'}.${body.table}` };
    }
    default:
      if (!body.collection) throw new ValidationError(`${store} search needs 'collection'`);
      return { scope: body.collection, container: body.collection };
  }
}
