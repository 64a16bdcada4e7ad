import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { startAnthropicProviderDouble, type AnthropicProviderDouble } from '../doubles/anthropic-provider-double.js';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from '../doubles/openai-provider-double.js';
import type { SseEvent } from '../doubles/sse.js';
import { adminRequest, createKey, eventually, ledgerView, type CreatedKey, type LedgerView } from '../support/api-client.js';
import { startDeployment, testUpstreamKey, type DeploymentKind, type TestDeployment } from '../support/gateway-harness.js';
import { claudeCodeLimits, claudeCodeModelNames } from '../support/test-catalog.js';

// One deployment for the Anthropic Messages surface suites, with both an Anthropic-wire double
// (svc/claude-test, svc/claude-backed) and an OpenAI-wire double (svc/alpha, svc/beta ...) behind it.
// svc/claude-test answers to Claude Code's model names (catalog aliases); svc/claude-backed falls
// back to svc/alpha by catalog; svc/alpha also answers to an old Claude name, so a Claude client can
// be routed to an OpenAI-wire model without knowing it.

export const anthropicUpstreamKey = 'test-anthropic-key';
export const alphaAlias = 'claude-3-5-haiku-20241022';
/** The deployment's body limit: well above Claude Code's first turn (about 76 KB), low enough to test cheaply. */
export const messagesBodyLimit = 2_000_000;

export interface MessagesContext {
  anthropic: AnthropicProviderDouble;
  openai: OpenAiProviderDouble;
  deployment: TestDeployment;
  /** A key with no budget or limits, created for the suite. */
  key: CreatedKey;
}

export function useMessagesGateway(kind: DeploymentKind): MessagesContext {
  const context = {} as MessagesContext;
  beforeAll(async () => {
    [context.anthropic, context.openai] = await Promise.all([startAnthropicProviderDouble({ apiKey: anthropicUpstreamKey }), startOpenAiProviderDouble({ apiKey: testUpstreamKey })]);
    context.deployment = await startDeployment(kind, {
      openAiUrl: context.openai.url,
      anthropicUrl: context.anthropic.url,
      anthropicModels: ['claude-test', 'claude-backed'],
      aliases: { 'claude-test': [...claudeCodeModelNames], alpha: [alphaAlias] },
      modelFallbacks: { 'claude-backed': ['svc/alpha'] },
      // Claude Code asks for max_tokens 64000 with thinking budgets just under it: a lower ceiling would break it.
      modelLimits: { 'claude-test': claudeCodeLimits, 'claude-backed': claudeCodeLimits },
      environment: { SWITCHBOARD_MAX_BODY_BYTES: String(messagesBodyLimit) },
    });
    context.key = await createKey(context.deployment, { name: 'messages suite key' });
  }, 60_000);
  beforeEach(() => {
    context.anthropic?.reset();
    context.openai?.reset();
  });
  afterAll(async () => {
    await context.deployment?.close();
    await Promise.all([context.anthropic?.close(), context.openai?.close()]);
  }, 30_000);
  return context;
}

/** The official client, unchanged but for the base URL (no /v1, as ANTHROPIC_BASE_URL) and the key. */
export function anthropicClient(context: MessagesContext, apiKey = context.key.key): Anthropic {
  return new Anthropic({ baseURL: context.deployment.url(), apiKey, maxRetries: 0 });
}

export type ApiError = InstanceType<typeof Anthropic.APIError>;

/** What a failed call threw; fails the test when it did not throw an APIError. */
export async function apiFailure(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(Anthropic.APIError);
  return error as ApiError;
}

/** POSTs a raw Messages request, as Claude Code does (x-api-key, its beta headers, `?beta=true`). */
export function postMessages(context: MessagesContext, body: unknown, options: { path?: string; headers?: Record<string, string>; apiKey?: string } = {}): Promise<Response> {
  return fetch(`${context.deployment.url()}${options.path ?? '/v1/messages'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': options.apiKey ?? context.key.key, ...options.headers },
    body: JSON.stringify(body),
  });
}

/** The key's ledger records, newest first, once at least `count` have landed. */
export async function ledgerOf(context: MessagesContext, keyId: string, count = 1): Promise<LedgerView[]> {
  return eventually(async () => {
    const { body } = await adminRequest(context.deployment, 'GET', `/admin/v1/requests?key_id=${keyId}`);
    expect(body.data.length).toBeGreaterThanOrEqual(count);
    return (body.data as Array<Record<string, unknown>>).map(ledgerView);
  });
}

export const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

export const hello: Anthropic.MessageParam[] = [{ role: 'user', content: 'Say hello' }];

export interface StreamEventData {
  type: string;
  index?: number;
  message?: { id: string; model: string; [field: string]: unknown };
  delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string | null; [field: string]: unknown };
  [field: string]: unknown;
}

/** Every event's `event:` name is its data's `type`; returns the parsed data, pings left out. */
export function eventData(events: SseEvent[]): StreamEventData[] {
  const data = events.map((event) => ({ name: event.event, data: JSON.parse(event.data) as StreamEventData }));
  for (const { name, data: parsed } of data) expect(name).toBe(parsed.type);
  return data.map(({ data: parsed }) => parsed).filter((parsed) => parsed.type !== 'ping');
}
