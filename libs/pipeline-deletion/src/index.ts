export type { DeletionReport } from './pipeline-deletion.service';
export { PipelineDeletionService } from './pipeline-deletion.service';
export { PipelineDeletionModule } from './pipeline-deletion.module';
