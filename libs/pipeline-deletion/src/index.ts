export type { DeletionReport } from './pipeline-deletion.service';
export { PipelineDeletionService } from './pipeline-deletion.service';
export { PipelineDeletionModule } from './pipeline-deletion.module';
export type { RemovedRows } from './job-rows.service';
export { JobNotFoundError, JobRowsService, RowsNotRemovableError } from './job-rows.service';
