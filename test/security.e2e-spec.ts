/**
 * Security: keys, jobs, taps and destinations.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './security-keys.e2e-part';
import './security-jobs.e2e-part';
import './security-taps.e2e-part';
import './security-destinations.e2e-part';
