/**
 * Authentication: API keys, the capability matrix, the auth modes and tenants.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './auth-keys.e2e-part';
import './auth-matrix.e2e-part';
import './auth-modes.e2e-part';
import './auth-tenants.e2e-part';
