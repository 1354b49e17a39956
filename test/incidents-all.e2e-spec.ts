/**
 * Incidents: the checks, their values and the taps' incidents.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './incidents.e2e-part';
import './incidents-values.e2e-part';
import './incidents-taps.e2e-part';
