/**
 * Request handling and error bodies: errors, request-errors, request-hygiene and error-codes.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './errors.e2e-part';
import './request-errors.e2e-part';
import './request-hygiene.e2e-part';
import './error-codes.e2e-part';
