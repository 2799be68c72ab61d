// Types of bin/sources.js, for the tests that import it.
export const ROOT: string;
export const VERBATIM: string[];
export function skipped(name: string): boolean;
export function buildConfig(root?: string): string;
export function stamp(root?: string): string;
export function sourceFolders(root?: string): string[];
export function sourceEntries(root?: string): string[];
export function assetFiles(root?: string): string[];
export function distIsCurrent(root?: string): boolean;
