import { startAnthropicProviderDouble, type AnthropicProviderDouble } from '../doubles/anthropic-provider-double.js';
import { startGeminiProviderDouble, type GeminiProviderDouble } from '../doubles/gemini-provider-double.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from '../doubles/openai-provider-double.js';
import { testUpstreamKey } from './gateway-harness.js';

// One provider double per wire format (OpenAI, Anthropic, Gemini), with the upstream keys the test
// catalog gives their providers, for the test files that talk to all three.

export const anthropicDoubleKey = 'test-anthropic-key';
export const geminiDoubleKey = 'test-gemini-key';

export interface ProviderDoubles {
  openai: OpenAiProviderDouble;
  anthropic: AnthropicProviderDouble;
  gemini: GeminiProviderDouble;
  /** The base URLs, as startEmbeddedDeployment's options name them. */
  urls: { openAiUrl: string; anthropicUrl: string; geminiUrl: string };
  /** Forgets scripted answers and recorded requests (before each test). */
  reset(): void;
  close(): Promise<void>;
}

export async function startProviderDoubles(): Promise<ProviderDoubles> {
  const [openai, anthropic, gemini] = await Promise.all([
    startOpenAiProviderDouble({ apiKey: testUpstreamKey }),
    startAnthropicProviderDouble({ apiKey: anthropicDoubleKey }),
    startGeminiProviderDouble({ apiKey: geminiDoubleKey }),
  ]);
  return {
    openai,
    anthropic,
    gemini,
    urls: { openAiUrl: openai.url, anthropicUrl: anthropic.url, geminiUrl: gemini.url },
    reset() {
      openai.reset();
      anthropic.reset();
      gemini.reset();
    },
    close: async () => {
      await Promise.all([openai.close(), anthropic.close(), gemini.close()]);
    },
  };
}
