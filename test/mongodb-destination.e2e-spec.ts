/**
 * MongoDB as a destination (the shared FerretDB), and its outage (a private one).
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './mongodb.e2e-part';
import './outage.e2e-part';
