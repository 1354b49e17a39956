/**
 * Ingestion of uploaded files: the formats, bad and hostile input, inference and the contract's fidelity.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './ingest.e2e-part';
import './ingest-bad-input.e2e-part';
import './ingest-hostile-input.e2e-part';
import './inference-files.e2e-part';
import './contract-fidelity.e2e-part';
