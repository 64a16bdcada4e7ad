import type { Catalog, ModelEntry } from '../catalog/catalog-types.js';
import { GatewayError } from '../errors.js';
import type { InternalRequest } from '../internal/request.js';
import { adapterFor } from './chat-adapter-registry.js';
import type { ChatAdapter } from './chat-adapter.js';

// One request may cause at most this many upstream calls, counting every fanned-out choice, target
// and deployment tried. Without a cap, n = 16 on a provider without `n`, over six targets with two
// deployments each, is 192 calls for one request. The ingress refuses what is certain to exceed it
// (the first try of every target); the fallback chain stops at it and answers with the failures so far.
export const maxProviderCallsPerRequest = 32;

/** Calls one try of one deployment needs: n when the provider makes one choice per call. */
export function callsPerTry(request: InternalRequest, adapter: ChatAdapter): number {
  return adapter.supportsMultipleChoices ? 1 : request.n;
}

/** The fewest calls the request needs if each target is tried once, on its cheapest deployment in calls. */
export function firstTryCalls(request: InternalRequest, targets: ModelEntry[], catalog: Catalog): number {
  let total = 0;
  for (const target of targets) {
    const perDeployment = target.deployments.map((deployment) => {
      const provider = catalog.providers.get(deployment.provider);
      return provider ? callsPerTry(request, adapterFor(provider.api)) : 1;
    });
    total += perDeployment.length > 0 ? Math.min(...perDeployment) : 1;
  }
  return total;
}

/** Refuses, before admission, a request whose fallbacks alone would pass the cap. */
export function checkProviderCallLimit(request: InternalRequest, targets: ModelEntry[], catalog: Catalog): void {
  const calls = firstTryCalls(request, targets, catalog);
  if (calls <= maxProviderCallsPerRequest) return;
  throw new GatewayError(
    'invalid_value',
    `This request could need ${calls} provider calls (n = ${request.n} over ${targets.length} models, where a model without native n takes one call per choice); at most ${maxProviderCallsPerRequest} are allowed per request. Lower n or use fewer fallbacks.`,
    { param: 'fallbacks' },
  );
}
