/**
 * The platform's probes and health, the OpenAPI document and configuration files.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './platform.e2e-part';
import './openapi.e2e-part';
import './health-down.e2e-part';
import './config-files.e2e-part';
