import type { CatalogExtension, CatalogFile } from './catalog-file-schema.js';

export class CatalogExtensionError extends Error {}

/**
 * The built-in catalog with an operator's additions: a provider of the same name replaces the
 * built-in one (its models then go there), a model of the same id replaces the built-in entry in
 * place, and everything else is added after the built-in entries.
 */
export function extendCatalogFile(base: CatalogFile, extension: CatalogExtension): CatalogFile {
  const added = extension.models ?? [];
  const byId = new Map<string, CatalogFile['models'][number]>();
  for (const model of added) {
    if (byId.has(model.id)) throw new CatalogExtensionError(`Model ${model.id} is listed twice.`);
    byId.set(model.id, model);
  }
  const replaced = base.models.map((model) => byId.get(model.id) ?? model);
  const baseIds = new Set(base.models.map((model) => model.id));
  const routing = base.routing || extension.routing ? { ...base.routing, ...extension.routing } : undefined;
  return {
    ...(routing ? { routing } : {}),
    providers: { ...base.providers, ...extension.providers },
    models: [...replaced, ...added.filter((model) => !baseIds.has(model.id))],
  };
}
