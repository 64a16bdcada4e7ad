import { z } from 'zod';
import { modelKinds, providerApis } from './catalog-types.js';

// The operator's catalog file (YAML or JSON), in the documented snake_case shape.

const timeouts = z
  .object({
    connect_ms: z.number().int().positive().optional(),
    first_token_ms: z.number().int().positive().optional(),
    total_ms: z.number().int().positive().optional(),
  })
  .strict();

/** How a deployment that keeps failing is taken out of rotation; 0 ms turns cool-downs off. */
const cooldownFields = {
  cooldown_ms: z.number().int().nonnegative().optional(),
  failures_before_cooldown: z.number().int().positive().optional(),
};

const provider = z
  .object({
    api: z.enum(providerApis),
    base_url: z.string().url(),
    api_key: z.string().optional(),
    api_version: z.string().optional(),
    headers: z.record(z.string()).optional(),
    timeouts: timeouts.optional(),
    ...cooldownFields,
  })
  .strict();

// A model without a price would be billed $0, so a missing input price refuses the whole catalog.
const missingPrice = 'a model without a price would be billed $0; give its price in USD per million tokens';
const price = z.number({ required_error: missingPrice, invalid_type_error: 'a price is a number of USD per million tokens' }).nonnegative();

const pricing = z
  .object(
    {
      prompt_usd_per_million: price,
      /** Required for chat models; embedding models bill input tokens only and leave it out. */
      completion_usd_per_million: price.optional(),
      /** Cached input read back; the input price when absent (providers that publish no cache price). */
      cache_read_usd_per_million: price.optional(),
      /** Input written to the cache (Anthropic 5-minute writes); the input price when absent. */
      cache_write_usd_per_million: price.optional(),
      /** Input written to the 1-hour cache (Anthropic); the write price when absent. */
      cache_write_1h_usd_per_million: price.optional(),
      /** Reasoning output tokens; the output price when absent. */
      reasoning_usd_per_million: price.optional(),
    },
    { required_error: missingPrice },
  )
  .strict();

/** One place a model can be served: a provider (an account, a key) and the name it knows the model by. */
const deployment = z
  .object({
    provider: z.string().min(1),
    upstream_model: z.string().min(1),
    weight: z.number().positive().optional(),
    /** What this deployment costs when it serves a request; the model's pricing when absent. */
    pricing: pricing.optional(),
  })
  .strict();

// A model names its one deployment inline (provider + upstream_model, the original shape) or lists
// several under `deployments`; both spellings stay valid so existing catalog files keep loading.
const model = z
  .object({
    id: z.string().regex(/^svc\/[A-Za-z0-9._:@-][A-Za-z0-9._:@/-]*$/, 'model ids look like svc/<name>'),
    /** chat (the default) or embeddings. */
    kind: z.enum(modelKinds).optional(),
    provider: z.string().min(1).optional(),
    upstream_model: z.string().min(1).optional(),
    deployments: z.array(deployment).min(1).optional(),
    context_length: z.number().int().positive(),
    max_output_tokens: z.number().int().positive().optional(),
    owned_by: z.string().optional(),
    created: z.number().int().nonnegative().optional(),
    pricing,
    /** Other names clients may use for this model on every surface (for example a provider's own model names). */
    aliases: z.array(z.string().min(1).max(256)).optional(),
    /** Fallbacks used when a request names none. */
    fallbacks: z.array(z.string().min(1)).max(5).optional(),
  })
  .strict()
  .superRefine((entry, context) => {
    const embeddings = entry.kind === 'embeddings';
    const prices = [{ path: ['pricing'], pricing: entry.pricing }, ...(entry.deployments ?? []).flatMap((deployment, index) => (deployment.pricing ? [{ path: ['deployments', index, 'pricing'], pricing: deployment.pricing }] : []))];
    for (const { path, pricing: price } of prices) {
      if (!embeddings && price.completion_usd_per_million === undefined) context.addIssue({ code: z.ZodIssueCode.custom, path: [...path, 'completion_usd_per_million'], message: `${missingPrice} of output` });
      if (embeddings && price.completion_usd_per_million !== undefined) context.addIssue({ code: z.ZodIssueCode.custom, path: [...path, 'completion_usd_per_million'], message: 'embedding models are billed per input token only; leave it out' });
    }
    const inline = entry.provider !== undefined || entry.upstream_model !== undefined;
    if (entry.deployments && inline) {
      context.addIssue({ code: z.ZodIssueCode.custom, path: ['deployments'], message: 'give either provider and upstream_model, or deployments, not both' });
    } else if (!entry.deployments) {
      for (const field of ['provider', 'upstream_model'] as const) {
        if (entry[field] === undefined) context.addIssue({ code: z.ZodIssueCode.custom, path: [field], message: 'Required (or list deployments)' });
      }
    }
  });

export const catalogFileSchema = z
  .object({
    /** Catalog-wide defaults for the cool-down fields; a provider's own values win. */
    routing: z.object(cooldownFields).strict().optional(),
    providers: z.record(provider),
    models: z.array(model).min(1),
  })
  .strict();

export type CatalogFile = z.infer<typeof catalogFileSchema>;

/**
 * A file that starts from the built-in catalog (`extends: default`): its providers and models are
 * added to the built-in ones, and replace those with the same provider name or model id.
 */
export const catalogExtensionSchema = catalogFileSchema.extend({
  extends: z.literal('default'),
  providers: z.record(provider).optional(),
  models: z.array(model).optional(),
});

export type CatalogExtension = z.infer<typeof catalogExtensionSchema>;
