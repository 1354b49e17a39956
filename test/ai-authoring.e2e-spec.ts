/**
 * AI: the assistant and tap authoring, against the model double.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './assistant.e2e-part';
import './tap-authoring.e2e-part';
