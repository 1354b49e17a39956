/**
 * Tenants and queries: search and natural-language SQL across tenants, NL query, the policy's entry points.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './search-tenants.e2e-part';
import './nl-query-tenants.e2e-part';
import './nl-query.e2e-part';
import './policy-entry-points.e2e-part';
