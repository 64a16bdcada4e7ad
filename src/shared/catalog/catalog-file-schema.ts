import { z } from 'zod';

// The operator's catalog file (YAML or JSON), in the documented snake_case shape.

const timeouts = z
  .object({
    connect_ms: z.number().int().positive().optional(),
    first_token_ms: z.number().int().positive().optional(),
    total_ms: z.number().int().positive().optional(),
  })
  .strict();

const provider = z
  .object({
    api: z.enum(['openai', 'azure', 'anthropic', 'gemini']),
    base_url: z.string().url(),
    api_key: z.string().optional(),
    api_version: z.string().optional(),
    headers: z.record(z.string()).optional(),
    timeouts: timeouts.optional(),
  })
  .strict();

const model = z
  .object({
    id: z.string().regex(/^svc\/[A-Za-z0-9._:@-][A-Za-z0-9._:@/-]*$/, 'model ids look like svc/<name>'),
    provider: z.string().min(1),
    upstream_model: z.string().min(1),
    context_length: z.number().int().positive(),
    max_output_tokens: z.number().int().positive().optional(),
    owned_by: z.string().optional(),
    created: z.number().int().nonnegative().optional(),
    pricing: z
      .object({
        prompt_usd_per_million: z.number().nonnegative(),
        completion_usd_per_million: z.number().nonnegative(),
      })
      .strict(),
  })
  .strict();

export const catalogFileSchema = z
  .object({
    providers: z.record(provider),
    models: z.array(model).min(1),
  })
  .strict();

export type CatalogFile = z.infer<typeof catalogFileSchema>;
