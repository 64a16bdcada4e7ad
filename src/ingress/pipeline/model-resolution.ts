import { findModel, type Catalog, type ModelEntry, type ModelKind } from '../../shared/catalog/catalog-types.js';
import { GatewayError } from '../../shared/errors.js';
import type { InternalRequest } from '../../shared/internal/request.js';

const endpoints: Record<ModelKind, string> = { chat: 'a chat endpoint (POST /v1/chat/completions, /v1/messages)', embeddings: 'POST /v1/embeddings' };

/**
 * The chain of models a request may use: the named model (by id or alias), then the request's own
 * fallbacks, or the model's catalog fallbacks when it names none. Every model must be of the
 * endpoint's `kind`: an embedding model named on a chat endpoint (or the reverse) is a 400.
 */
export function resolveTargets(catalog: Catalog, request: Pick<InternalRequest, 'model' | 'fallbacks'>, kind: ModelKind = 'chat'): ModelEntry[] {
  const find = (name: string, param: string): ModelEntry => {
    const model = findModel(catalog, name);
    // A name that is neither a catalog id nor an alias is most likely a provider's own model name.
    if (!model && !name.startsWith('svc/')) throw new GatewayError('invalid_value', `Invalid value for '${param}': Model IDs look like svc/<model name>, or one of the catalog's aliases; GET /v1/models lists them.`, { param });
    if (!model) throw new GatewayError('model_not_found', `The model \`${name}\` does not exist. GET /v1/models lists the models this gateway serves.`, { param });
    if (model.kind !== kind) throw new GatewayError('invalid_value', `Invalid value for '${param}': ${model.id} is ${model.kind === 'embeddings' ? 'an embeddings' : 'a chat'} model; use it with ${endpoints[model.kind]}.`, { param });
    return model;
  };
  const primary = find(request.model, 'model');
  const fallbacks = request.fallbacks ? request.fallbacks.map((name, position) => find(name, `fallbacks[${position}]`)) : primary.fallbacks.map((id) => find(id, 'model'));
  return [primary, ...fallbacks];
}
