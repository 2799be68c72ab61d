/** Getting models: the catalog, model specs, and resolving them to verified GGUF files in the cache. */
export { MODEL_CATALOG, catalogModel, type CatalogModel, type ModelDefaults, type WheelSource } from './catalog.ts';
export { parseModelSpec, toModelId, type ModelSpec } from './model-spec.ts';
export { BUILTIN_MODEL_ID, resolveModel, type ModelProgress, type ResolveModelOptions, type ResolvedModel } from './resolve-model.ts';
export { listModels, type ListedModel } from './list-models.ts';
export { downloadFile, type DownloadFileOptions, type DownloadProgress, type DownloadedFile } from './download-file.ts';
export { extractZipMember, extractZipMembers, type ExtractZipMemberOptions, type ExtractZipMembersOptions } from './zip-member.ts';
export { cachedSha256, sha256File } from './file-sha256.ts';
export { withCacheLock, type CacheLockOptions } from './cache-lock.ts';
