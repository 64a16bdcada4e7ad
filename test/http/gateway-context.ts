import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startOpenAiProviderDouble, type OpenAiProviderDouble } from '../doubles/openai-provider-double.js';
import { createKey, type CreatedKey } from '../support/api-client.js';
import { startDeployment, type DeploymentKind, type TestDeployment } from '../support/gateway-harness.js';

export interface GatewayContext {
  double: OpenAiProviderDouble;
  deployment: TestDeployment;
  /** A key with no budget or limits, created for the suite. */
  key: CreatedKey;
}

/**
 * One provider double and one deployment for a whole test file; the double's scripts reset per
 * test. `kind` names a registered deployment, or a function starts one of the test's own.
 */
export function useGateway(kind: DeploymentKind | ((providerUrl: string) => Promise<TestDeployment>), environment: Record<string, string> = {}): GatewayContext {
  const context = {} as GatewayContext;
  beforeAll(async () => {
    context.double = await startOpenAiProviderDouble({ apiKey: 'upstream-secret-key' });
    context.deployment = typeof kind === 'function' ? await kind(context.double.url) : await startDeployment(kind, { openAiUrl: context.double.url, environment });
    context.key = await createKey(context.deployment, { name: 'suite key' });
  }, 60_000);
  beforeEach(() => {
    context.double?.reset();
  });
  afterAll(async () => {
    await context.deployment?.close();
    await context.double?.close();
  }, 30_000);
  return context;
}
