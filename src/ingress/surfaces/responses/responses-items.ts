import { GatewayError } from '../../../shared/errors.js';
import { mediaFromUrl, dataUrlPattern } from '../../../shared/internal/media.js';
import type { ContentPart, InternalMessage, ToolResultContent } from '../../../shared/internal/parts.js';
import type { ResponseItem } from './responses-schema.js';

// Responses input items (and stored output items, which clients send back the same way) as
// internal messages. Items of hosted tools (web_search_call, image_generation_call...) have no
// counterpart on other providers and are left out; so are parts of unknown types.

type Json = Record<string, unknown>;

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function contentPart(raw: Json): ContentPart | undefined {
  switch (raw.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      return { type: 'text', text: str(raw.text) };
    case 'refusal':
      return { type: 'refusal', text: str(raw.refusal) };
    case 'input_image': {
      const detail = typeof raw.detail === 'string' ? { detail: raw.detail } : {};
      if (typeof raw.image_url === 'string') return { type: 'image', source: mediaFromUrl(raw.image_url), ...detail };
      if (typeof raw.file_id === 'string') return { type: 'image', source: { kind: 'file_id', id: raw.file_id }, ...detail };
      return undefined;
    }
    case 'input_file': {
      const filename = typeof raw.filename === 'string' ? { filename: raw.filename } : {};
      const data = typeof raw.file_data === 'string' ? dataUrlPattern.exec(raw.file_data) : null;
      if (data) return { type: 'file', source: { kind: 'base64', mediaType: data[1]!, data: data[2]! }, ...filename };
      if (typeof raw.file_id === 'string') return { type: 'file', source: { kind: 'file_id', id: raw.file_id }, ...filename };
      if (typeof raw.file_url === 'string') return { type: 'file', source: { kind: 'url', url: raw.file_url }, ...filename };
      return undefined;
    }
    default:
      return undefined;
  }
}

function messageContent(content: unknown): { content: ContentPart[]; plainText?: boolean } {
  if (typeof content === 'string') return { content: content === '' ? [] : [{ type: 'text', text: content }], plainText: true };
  if (!Array.isArray(content)) return { content: [] };
  return { content: content.flatMap((part) => (part && typeof part === 'object' ? contentPart(part as Json) ?? [] : [])) };
}

function toolOutput(output: unknown): string | ToolResultContent {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output)) return JSON.stringify(output ?? '');
  return output.flatMap((part) => {
    const converted = part && typeof part === 'object' ? contentPart(part as Json) : undefined;
    return converted && (converted.type === 'text' || converted.type === 'image' || converted.type === 'file') ? [converted] : [];
  });
}

const roles: Record<string, InternalMessage['role']> = { system: 'system', developer: 'system', user: 'user', assistant: 'assistant' };

/** The assistant message that an item of the model's turn joins: the last one, or a new one. */
function assistantTurn(messages: InternalMessage[]): InternalMessage {
  const last = messages[messages.length - 1];
  if (last?.role === 'assistant') return last;
  const turn: InternalMessage = { role: 'assistant', content: [] };
  messages.push(turn);
  return turn;
}

export function itemsToMessages(items: ResponseItem[]): InternalMessage[] {
  const messages: InternalMessage[] = [];
  items.forEach((item, index) => {
    const raw = item as Json;
    const type = item.type ?? (item.role ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = roles[str(item.role)];
        if (!role) throw new GatewayError('invalid_value', `Invalid value for 'input[${index}].role': roles are user, assistant, system and developer.`, { param: `input[${index}].role` });
        const parsed = messageContent(raw.content);
        if (role === 'assistant') {
          // An assistant message after its own reasoning or calls is the same turn.
          const turn = assistantTurn(messages);
          turn.content.push(...parsed.content);
          if (parsed.plainText && turn.content.length === parsed.content.length) turn.plainText = true;
        } else messages.push({ role, ...parsed });
        return;
      }
      case 'function_call':
      case 'custom_tool_call':
        assistantTurn(messages).content.push({
          type: 'tool_call',
          id: str(raw.call_id),
          name: str(raw.name),
          arguments: type === 'function_call' ? str(raw.arguments) : JSON.stringify({ input: str(raw.input) }),
        });
        return;
      case 'function_call_output':
      case 'custom_tool_call_output':
        messages.push({ role: 'tool', content: [{ type: 'tool_result', toolCallId: str(raw.call_id), content: toolOutput(raw.output) }] });
        return;
      case 'reasoning': {
        const summary = Array.isArray(raw.summary) ? raw.summary.map((part) => str((part as Json | null)?.text)).join('\n') : '';
        const signature = typeof raw.encrypted_content === 'string' ? raw.encrypted_content : undefined;
        if (!summary && !signature) return;
        assistantTurn(messages).content.push(signature ? { type: 'reasoning', text: summary, signature } : { type: 'reasoning', text: summary });
        return;
      }
      case 'item_reference':
        throw new GatewayError('invalid_value', `Item '${str(raw.id)}' was not found among this key's stored responses.`, { param: `input[${index}].id` });
      default:
        return;
    }
  });
  return messages;
}
