/**
 * Destination writes: write modes, decimals, sink timeouts and the fan-out to several sinks.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './write-modes.e2e-part';
import './decimal.e2e-part';
import './sink-timeouts.e2e-part';
import './sinks-fanout.e2e-part';
