import { GatewayError } from '../../../shared/errors.js';
import type { Store, StoredResponse } from '../../../shared/store/store.js';
import { itemId, responseIdOfItem } from './responses-object.js';
import type { ResponseItem, ResponsesRequest } from './responses-schema.js';

// The conversation a request continues: a stored previous response (its context, its input and its
// output) and item references to items of stored responses, all of the same key. Another key's
// response reads as missing, as a response that expired or never was.

type Json = Record<string, unknown>;

export interface Conversation {
  /** Items before this request's input (from previous_response_id). */
  contextItems: Json[];
  /** This request's input items, references resolved. */
  inputItems: Json[];
}

function findItem(record: StoredResponse, id: string): Json | undefined {
  const output = Array.isArray(record.response.output) ? (record.response.output as Json[]) : [];
  return [...output, ...record.inputItems, ...record.contextItems].find((item) => item.id === id);
}

export async function resolveConversation(store: Store, keyId: string, request: ResponsesRequest): Promise<Conversation> {
  const cache = new Map<string, StoredResponse | null>();
  const load = async (id: string) => {
    if (!cache.has(id)) cache.set(id, await store.getResponse(id, keyId));
    return cache.get(id)!;
  };

  let contextItems: Json[] = [];
  if (request.previous_response_id) {
    const previous = await load(request.previous_response_id);
    if (!previous) throw new GatewayError('not_found', `Previous response with id '${request.previous_response_id}' not found.`, { param: 'previous_response_id' });
    const output = Array.isArray(previous.response.output) ? (previous.response.output as Json[]) : [];
    contextItems = [...previous.contextItems, ...previous.inputItems, ...output];
  }

  const given: ResponseItem[] = typeof request.input === 'string' ? [{ type: 'message', role: 'user', content: request.input }] : request.input ?? [];
  const inputItems: Json[] = [];
  for (const [index, item] of given.entries()) {
    if (item.type !== 'item_reference') {
      inputItems.push(item);
      continue;
    }
    const id = typeof item.id === 'string' ? item.id : '';
    const owner = responseIdOfItem(id);
    const found = owner ? findItem((await load(owner)) ?? ({ response: {}, inputItems: [], contextItems: [] } as unknown as StoredResponse), id) : undefined;
    if (!found) throw new GatewayError('not_found', `Item with id '${id}' not found among this key's stored responses.`, { param: `input[${index}].id` });
    inputItems.push(found);
  }
  return { contextItems, inputItems };
}

/** Message items as stored and listed: with ids, as OpenAI gives them. */
export function withItemIds(items: Json[], responseId: string): Json[] {
  return items.map((item, index) => {
    const isMessage = item.type === 'message' || (item.type === undefined && item.role !== undefined);
    return isMessage && item.id === undefined ? { ...item, type: 'message', id: itemId(responseId, 'msg', `in${index}`) } : item;
  });
}
