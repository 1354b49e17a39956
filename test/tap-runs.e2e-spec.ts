/**
 * Tap runs: state between runs, streaming and the limits.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './tap-state.e2e-part';
import './tap-streaming.e2e-part';
import './tap-limits.e2e-part';
