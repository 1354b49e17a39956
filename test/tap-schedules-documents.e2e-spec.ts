/**
 * Taps: schedules across workers, and document taps.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './tap-schedules.e2e-part';
import './tap-documents.e2e-part';
