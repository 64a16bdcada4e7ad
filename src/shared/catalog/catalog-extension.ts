import type { CatalogExtension, CatalogFile } from './catalog-file-schema.js';

export class CatalogExtensionError extends Error {}

/**
 * The built-in catalog with an operator's additions: a provider of the same name replaces the
 * built-in one (its models then go there), a model of the same id replaces the built-in entry in
 * place, and everything else is added after the built-in entries. `routing` merges field by field;
 * any other top-level section the file gives replaces the built-in one.
 */
export function extendCatalogFile(base: CatalogFile, extension: CatalogExtension): CatalogFile {
  const { extends: _from, providers, models = [], routing, ...sections } = extension;
  const byId = new Map<string, CatalogFile['models'][number]>();
  for (const model of models) {
    if (byId.has(model.id)) throw new CatalogExtensionError(`Model ${model.id} is listed twice.`);
    byId.set(model.id, model);
  }
  const baseIds = new Set(base.models.map((model) => model.id));
  const mergedRouting = base.routing || routing ? { ...base.routing, ...routing } : undefined;
  return {
    ...base,
    ...sections,
    ...(mergedRouting ? { routing: mergedRouting } : {}),
    providers: { ...base.providers, ...providers },
    models: [...base.models.map((model) => byId.get(model.id) ?? model), ...models.filter((model) => !baseIds.has(model.id))],
  };
}
