import { findModel, type Catalog, type ModelEntry, type ModelKind } from '../../shared/catalog/catalog-types.js';
import { GatewayError } from '../../shared/errors.js';
import type { InternalRequest } from '../../shared/internal/request.js';
import { modelAllowed } from '../../shared/keys/model-allow-list.js';

const endpoints: Record<ModelKind, string> = { chat: 'a chat endpoint (POST /v1/chat/completions, /v1/messages)', embeddings: 'POST /v1/embeddings' };

function notAllowed(name: string, model: ModelEntry, param: string): GatewayError {
  const via = name === model.id ? '' : ` (${name} resolves to it)`;
  return new GatewayError('model_not_allowed', `This API key may not use the model \`${model.id}\`${via}. GET /v1/models lists the models it may use.`, { param });
}

/**
 * The chain of models a request may use: the named model (by id or alias), then the request's own
 * fallbacks, or the model's catalog fallbacks when it names none. Every model must be of the
 * endpoint's `kind`: an embedding model named on a chat endpoint (or the reverse) is a 400.
 * The key's allow-list (`allowedModels`) applies to the model and to fallbacks the request names
 * (403 model_not_allowed); catalog fallbacks outside it are left out of the chain rather than
 * refused, since the client did not ask for them.
 */
export function resolveTargets(catalog: Catalog, request: Pick<InternalRequest, 'model' | 'fallbacks'>, kind: ModelKind = 'chat', allowedModels: readonly string[] | null = null): ModelEntry[] {
  const find = (name: string, param: string): ModelEntry => {
    const model = findModel(catalog, name);
    // A name that is neither a catalog id nor an alias is most likely a provider's own model name.
    if (!model && !name.startsWith('svc/')) throw new GatewayError('invalid_value', `Invalid value for '${param}': Model IDs look like svc/<model name>, or one of the catalog's aliases; GET /v1/models lists them.`, { param });
    if (!model) throw new GatewayError('model_not_found', `The model \`${name}\` does not exist. GET /v1/models lists the models this gateway serves.`, { param });
    if (model.kind !== kind) throw new GatewayError('invalid_value', `Invalid value for '${param}': ${model.id} is ${model.kind === 'embeddings' ? 'an embeddings' : 'a chat'} model; use it with ${endpoints[model.kind]}.`, { param });
    return model;
  };
  const primary = find(request.model, 'model');
  if (!modelAllowed(allowedModels, primary.id)) throw notAllowed(request.model, primary, 'model');
  if (!request.fallbacks) return [primary, ...primary.fallbacks.map((id) => find(id, 'model')).filter((model) => modelAllowed(allowedModels, model.id))];
  // A fallback that repeats the model or an earlier fallback (by id or alias) only multiplies provider calls.
  const chain = [primary];
  request.fallbacks.forEach((name, index) => {
    const model = find(name, `fallbacks[${index}]`);
    if (!modelAllowed(allowedModels, model.id)) throw notAllowed(name, model, `fallbacks[${index}]`);
    if (chain.includes(model)) {
      const what = model === primary ? 'the model' : 'an earlier fallback';
      throw new GatewayError('invalid_value', `Invalid value for 'fallbacks[${index}]': ${name} is already ${what}; each model may appear once.`, { param: `fallbacks[${index}]` });
    }
    chain.push(model);
  });
  return chain;
}
