/**
 * Pipelines, their jobs, metadata and discovery, secrets, the queue, the test hooks and the offline OpenAPI document.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './pipelines.e2e-part';
import './pipeline-jobs.e2e-part';
import './metadata.e2e-part';
import './discovery.e2e-part';
import './secrets.e2e-part';
import './queue.e2e-part';
import './test-hooks.e2e-part';
import './openapi-offline.e2e-part';
