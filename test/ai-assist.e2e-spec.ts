/**
 * AI features around the assistant: the providers, cancel and reconnect, tool arguments, pipeline advice.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './ai-providers.e2e-part';
import './assistant-cancel-reconnect.e2e-part';
import './assistant-tool-args.e2e-part';
import './pipeline-advice.e2e-part';
