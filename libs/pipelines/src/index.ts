export * from './destination-confinement';
export * from './dto/pipeline-config.dto';
export * from './expression';
export * from './pipeline-definition';
export * from './pipeline-scope';
export * from './pipeline.types';
export * from './pipelines.module';
export * from './pipelines.service';
