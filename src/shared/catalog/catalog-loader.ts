import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { extendCatalogFile } from './catalog-extension.js';
import { catalogExtensionSchema, catalogFileSchema, type CatalogFile } from './catalog-file-schema.js';
import { defaultCooldown, isEmbeddingsApi, type Catalog, type ModelDeployment, type ModelEntry, type ProviderConfig } from './catalog-types.js';
import { defaultCatalogFile } from './default-catalog.js';

export const defaultTimeouts = { connectMs: 5_000, firstTokenMs: 60_000, totalMs: 600_000 };
const defaultCreated = 1_735_689_600; // 2025-01-01, a stable `created` for catalog entries

export class CatalogError extends Error {}

const variablePattern = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Replaces ${VAR} with the environment's value; a string naming an unset variable becomes undefined. */
function substitute(value: string, environment: NodeJS.ProcessEnv): { value?: string; variable?: string } {
  let missing: string | undefined;
  let firstVariable: string | undefined;
  const result = value.replace(variablePattern, (_match, name: string) => {
    firstVariable ??= name;
    const found = environment[name];
    if (found === undefined || found === '') missing = name;
    return found ?? '';
  });
  return missing ? { variable: firstVariable } : { value: result, variable: firstVariable };
}

export function buildCatalog(file: CatalogFile, environment: NodeJS.ProcessEnv = process.env): Catalog {
  const providers = new Map<string, ProviderConfig>();
  for (const [name, entry] of Object.entries(file.providers)) {
    const key = entry.api_key === undefined ? { value: undefined } : substitute(entry.api_key, environment);
    const baseUrl = substitute(entry.base_url, environment).value ?? entry.base_url;
    providers.set(name, {
      name,
      api: entry.api,
      baseUrl: baseUrl.replace(/\/+$/, ''),
      apiKey: key.value,
      apiKeyVariable: key.variable,
      apiVersion: entry.api_version,
      headers: entry.headers ?? {},
      timeouts: {
        connectMs: entry.timeouts?.connect_ms ?? defaultTimeouts.connectMs,
        firstTokenMs: entry.timeouts?.first_token_ms ?? defaultTimeouts.firstTokenMs,
        totalMs: entry.timeouts?.total_ms ?? defaultTimeouts.totalMs,
      },
      cooldown: {
        cooldownMs: entry.cooldown_ms ?? file.routing?.cooldown_ms ?? defaultCooldown.cooldownMs,
        failuresBeforeCooldown: entry.failures_before_cooldown ?? file.routing?.failures_before_cooldown ?? defaultCooldown.failuresBeforeCooldown,
      },
    });
  }
  const models = new Map<string, ModelEntry>();
  for (const model of file.models) {
    if (models.has(model.id)) throw new CatalogError(`Model ${model.id} is listed twice.`);
    const pricing = toPricing(model.pricing);
    const deployments = deploymentsOf(model, pricing, providers);
    const first = deployments[0]!;
    const kind = model.kind ?? 'chat';
    if (kind === 'embeddings') {
      for (const deployment of deployments) {
        const api = providers.get(deployment.provider)!.api;
        if (!isEmbeddingsApi(api)) throw new CatalogError(`Model ${model.id} is an embedding model, but provider '${deployment.provider}' speaks ${api}, which has no embeddings endpoint.`);
      }
    }
    models.set(model.id, {
      id: model.id,
      kind,
      provider: first.provider,
      upstreamModel: first.upstreamModel,
      deployments,
      contextLength: model.context_length,
      maxOutputTokens: model.max_output_tokens ?? Math.min(model.context_length, 16_384),
      pricing,
      ownedBy: model.owned_by ?? first.provider,
      created: model.created ?? defaultCreated,
      fallbacks: model.fallbacks ?? [],
    });
  }
  return { providers, models, aliases: aliasesOf(file, models) };
}

/** Every alias names one model, and fallbacks name models of the catalog. */
function aliasesOf(file: CatalogFile, models: Map<string, ModelEntry>): Map<string, string> {
  const aliases = new Map<string, string>();
  for (const model of file.models) {
    for (const alias of model.aliases ?? []) {
      if (models.has(alias)) throw new CatalogError(`The alias ${alias} of ${model.id} is the id of another model.`);
      const taken = aliases.get(alias);
      if (taken && taken !== model.id) throw new CatalogError(`The alias ${alias} is given to both ${taken} and ${model.id}.`);
      aliases.set(alias, model.id);
    }
  }
  for (const model of file.models) {
    for (const fallback of model.fallbacks ?? []) {
      if (!models.has(fallback) && !aliases.has(fallback)) throw new CatalogError(`Model ${model.id} names the fallback ${fallback}, which the catalog does not define.`);
      if (fallback === model.id || aliases.get(fallback) === model.id) throw new CatalogError(`Model ${model.id} names itself as a fallback.`);
      const target = models.get(fallback) ?? models.get(aliases.get(fallback) ?? '');
      const kind = model.kind ?? 'chat';
      if (target && target.kind !== kind) throw new CatalogError(`Model ${model.id} (${kind}) names the fallback ${fallback}, which is ${target.kind === 'embeddings' ? 'an embeddings' : 'a chat'} model.`);
    }
  }
  return aliases;
}

type FileModel = CatalogFile['models'][number];
type FilePricing = FileModel['pricing'];

function toPricing(pricing: FilePricing): ModelEntry['pricing'] {
  const result: ModelEntry['pricing'] = { promptUsdPerMillion: pricing.prompt_usd_per_million, completionUsdPerMillion: pricing.completion_usd_per_million ?? 0 };
  // Left unset when absent: pricing.ts applies the documented fallbacks (input price, output price).
  if (pricing.cache_read_usd_per_million !== undefined) result.cacheReadUsdPerMillion = pricing.cache_read_usd_per_million;
  if (pricing.cache_write_usd_per_million !== undefined) result.cacheWriteUsdPerMillion = pricing.cache_write_usd_per_million;
  if (pricing.cache_write_1h_usd_per_million !== undefined) result.cacheWrite1hUsdPerMillion = pricing.cache_write_1h_usd_per_million;
  if (pricing.reasoning_usd_per_million !== undefined) result.reasoningUsdPerMillion = pricing.reasoning_usd_per_million;
  return result;
}

/** The inline provider + upstream_model form is a list of one deployment. */
function deploymentsOf(model: FileModel, pricing: ModelEntry['pricing'], providers: Map<string, ProviderConfig>): ModelDeployment[] {
  // The schema guarantees one form or the other.
  const listed = model.deployments ?? [{ provider: model.provider!, upstream_model: model.upstream_model! }];
  const deployments: ModelDeployment[] = [];
  for (const entry of listed) {
    if (!providers.has(entry.provider)) throw new CatalogError(`Model ${model.id} names provider '${entry.provider}', which the catalog does not define.`);
    const id = `${entry.provider}/${entry.upstream_model}`;
    if (deployments.some((existing) => existing.id === id)) throw new CatalogError(`Model ${model.id} lists the deployment ${id} twice.`);
    deployments.push({
      id,
      provider: entry.provider,
      upstreamModel: entry.upstream_model,
      weight: 'weight' in entry && entry.weight !== undefined ? entry.weight : 1,
      pricing: 'pricing' in entry && entry.pricing ? toPricing(entry.pricing) : pricing,
    });
  }
  return deployments;
}

export function parseCatalogText(text: string, source: string): CatalogFile {
  let raw: unknown;
  try {
    raw = source.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new CatalogError(`The catalog ${source} cannot be parsed: ${(error as Error).message}`);
  }
  // `extends: default` makes the file a set of additions to the built-in catalog.
  const extending = typeof raw === 'object' && raw !== null && 'extends' in raw;
  const parsed = (extending ? catalogExtensionSchema : catalogFileSchema).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CatalogError(`The catalog ${source} is invalid at ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  if (!('extends' in parsed.data)) return parsed.data;
  try {
    return extendCatalogFile(defaultCatalogFile, parsed.data);
  } catch (error) {
    throw new CatalogError(`The catalog ${source} cannot extend the built-in catalog: ${(error as Error).message}`);
  }
}

/** The operator's file when SWITCHBOARD_CATALOG is set (on its own, or added to the built-in catalog with `extends: default`), else the built-in catalog. */
export function loadCatalog(environment: NodeJS.ProcessEnv = process.env): Catalog {
  const path = environment.SWITCHBOARD_CATALOG;
  if (!path) return buildCatalog(defaultCatalogFile, environment);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CatalogError(`The catalog file ${path} cannot be read: ${(error as Error).message}`);
  }
  return buildCatalog(parseCatalogText(text, path), environment);
}
