export * from './pipeline-advice.service';
export * from './pipeline-advice.module';
