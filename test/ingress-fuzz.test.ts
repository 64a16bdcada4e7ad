import { describe, expect, it } from 'vitest';
import { useGateway, type GatewayContext } from './http/gateway-context.js';
import { chat, hello } from './support/api-client.js';
import { runFuzz } from './support/http-fuzz.js';
import { scaledOutAvailable, scaledOutSkipNotice, startScaledDeployment, type ScaledDeployment } from './support/scaled-harness.js';

// Hostile requests from a fixed seed for a bounded time, against the embedded gateway and a scaled
// ingress process. Every answer must be well-formed HTTP with a JSON error body for errors (or the
// connection closed, for framing the server refuses), and the gateway must still serve afterwards.

const seed = 20_261_122;
const fuzzOptions = { seed, durationMs: 2500, maxCases: 1500, concurrency: 6 };

function describeFuzz(context: GatewayContext, alive: () => boolean): void {
  it(`answers seeded hostile requests (for ${fuzzOptions.durationMs} ms) with well-formed HTTP and JSON errors, and keeps serving`, async () => {
    const url = context.deployment.url();
    const result = await runFuzz(url, { adminToken: context.deployment.adminToken, apiKey: context.key.key }, fuzzOptions);
    expect(result.problems.slice(0, 20), `${result.cases} cases`).toEqual([]);
    expect(result.cases).toBeGreaterThan(50);
    expect(result.answered).toBeGreaterThan(result.cases / 2);
    expect(alive()).toBe(true);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const completion = await chat(context.deployment, context.key.key, { model: 'svc/alpha', messages: hello });
    expect(completion.status).toBe(200);
  }, 30_000);
}

describe('fuzzing the embedded gateway', () => {
  const context = useGateway('embedded');
  describeFuzz(context, () => true);
});

describe.skipIf(!scaledOutAvailable)('fuzzing a scaled-out ingress process', () => {
  let scaled: ScaledDeployment | undefined;
  const context = useGateway(async (openAiUrl) => {
    scaled = await startScaledDeployment({ openAiUrl, ingressCount: 1, workerCount: 1 });
    return scaled;
  });
  describeFuzz(context, () => scaled!.ingresses.every((ingress) => ingress.child.exitCode === null && ingress.child.signalCode === null));
});

if (!scaledOutAvailable) process.stderr.write(`ingress fuzz (scaled out): ${scaledOutSkipNotice}\n`);
