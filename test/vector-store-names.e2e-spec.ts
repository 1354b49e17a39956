/**
 * Vector stores: foreign containers and pgvector names.
 * One file for several parts: Jest loads a file's modules anew for each file (some 2 s of CPU for one
 * that boots the apps), and these parts share them. Each part keeps its own describe, set-up and names.
 */
import './vector-store-foreign.e2e-part';
import './pgvector-names.e2e-part';
