import type { ProviderApi } from '../catalog/catalog-types.js';
import { anthropicAdapter } from './anthropic/anthropic-adapter.js';
import { azureOpenAiAdapter } from './openai/azure-openai-adapter.js';
import { geminiAdapter } from './gemini/gemini-adapter.js';
import { openAiAdapter } from './openai/openai-adapter.js';
import { openAiResponsesAdapter } from './openai-responses/openai-responses-adapter.js';
import type { ChatAdapter } from './chat-adapter.js';

const adapters: Record<ProviderApi, ChatAdapter> = {
  openai: openAiAdapter,
  'openai-responses': openAiResponsesAdapter,
  azure: azureOpenAiAdapter,
  anthropic: anthropicAdapter,
  gemini: geminiAdapter,
};

/** The adapter for a provider's wire format; the Record type makes a new ProviderApi a compile error here. */
export function adapterFor(api: ProviderApi): ChatAdapter {
  const adapter = adapters[api];
  if (!adapter) throw new Error(`No adapter for provider API '${String(api)}'.`);
  return adapter;
}
