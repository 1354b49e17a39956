/**
 * Loads: diagnostics, the schema contract, the CSV fast path and the object-store destination.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './load-diagnostics.e2e-part';
import './schema-contract.e2e-part';
import './csv-fast-path.e2e-part';
import './objectstore-destination.e2e-part';
