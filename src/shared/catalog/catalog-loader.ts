import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { catalogFileSchema, type CatalogFile } from './catalog-file-schema.js';
import type { Catalog, ModelEntry, ProviderConfig } from './catalog-types.js';
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
    });
  }
  const models = new Map<string, ModelEntry>();
  for (const model of file.models) {
    if (!providers.has(model.provider)) throw new CatalogError(`Model ${model.id} names provider '${model.provider}', which the catalog does not define.`);
    if (models.has(model.id)) throw new CatalogError(`Model ${model.id} is listed twice.`);
    models.set(model.id, {
      id: model.id,
      provider: model.provider,
      upstreamModel: model.upstream_model,
      contextLength: model.context_length,
      maxOutputTokens: model.max_output_tokens ?? Math.min(model.context_length, 16_384),
      pricing: { promptUsdPerMillion: model.pricing.prompt_usd_per_million, completionUsdPerMillion: model.pricing.completion_usd_per_million },
      ownedBy: model.owned_by ?? model.provider,
      created: model.created ?? defaultCreated,
    });
  }
  return { providers, models };
}

export function parseCatalogText(text: string, source: string): CatalogFile {
  let raw: unknown;
  try {
    raw = source.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new CatalogError(`The catalog ${source} cannot be parsed: ${(error as Error).message}`);
  }
  const parsed = catalogFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CatalogError(`The catalog ${source} is invalid at ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  return parsed.data;
}

/** The operator's file when SWITCHBOARD_CATALOG is set, else the built-in catalog. */
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
