// Test double of a provider that speaks OpenAI's Responses API (POST /v1/responses), streamed and
// not, with event shapes as FORMATS-2.md §1 describes them (text, function calls, reasoning items
// with encrypted content, usage with cached and reasoning details), and, as OpenAI does, Chat
// Completions beside it (POST /v1/chat/completions, the same scripts in that format).
import { randomBytes } from 'node:crypto';
import { readJsonBody, startProviderDoubleServer, type ProviderDouble, type ProviderExchange } from './provider-double-server.js';

export type ResponsesBehaviour =
  | { kind: 'text'; chunks: string[]; reasoning?: { summary: string; encrypted: string }; usage?: { input: number; output: number; cached?: number; reasoning?: number } }
  | { kind: 'function_call'; name: string; arguments: string; callId?: string }
  | { kind: 'error'; status: number; message?: string };

export interface ResponsesRecordedRequest {
  model: string;
  path: string;
  body: any;
  headers: Record<string, string>;
}

export type ResponsesProviderDouble = ProviderDouble<ResponsesBehaviour, ResponsesRecordedRequest, { model: string }>;

const hex = () => randomBytes(8).toString('hex');

function outputOf(behaviour: Exclude<ResponsesBehaviour, { kind: 'error' }>): Array<Record<string, unknown>> {
  if (behaviour.kind === 'function_call') {
    return [{ id: `fc_${hex()}`, type: 'function_call', status: 'completed', call_id: behaviour.callId ?? `call_${hex()}`, name: behaviour.name, arguments: behaviour.arguments }];
  }
  const items: Array<Record<string, unknown>> = [];
  if (behaviour.reasoning) items.push({ id: `rs_${hex()}`, type: 'reasoning', summary: [{ type: 'summary_text', text: behaviour.reasoning.summary }], encrypted_content: behaviour.reasoning.encrypted });
  items.push({ id: `msg_${hex()}`, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: behaviour.chunks.join(''), annotations: [] }] });
  return items;
}

function usageOf(behaviour: Exclude<ResponsesBehaviour, { kind: 'error' }>) {
  const usage = behaviour.kind === 'text' ? behaviour.usage : undefined;
  const input = usage?.input ?? 10;
  const output = usage?.output ?? 5;
  return { input_tokens: input, input_tokens_details: { cached_tokens: usage?.cached ?? 0 }, output_tokens: output, output_tokens_details: { reasoning_tokens: usage?.reasoning ?? 0 }, total_tokens: input + output };
}

/** The stream of one answer, event by event, as OpenAI sends it. */
function events(behaviour: Exclude<ResponsesBehaviour, { kind: 'error' }>, model: string): Array<Record<string, unknown>> {
  const id = `resp_${hex()}`;
  const base = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), model, status: 'in_progress', output: [] as unknown[] };
  const list: Array<Record<string, unknown>> = [{ type: 'response.created', response: base }, { type: 'response.in_progress', response: base }];
  const output = outputOf(behaviour);
  output.forEach((item, index) => {
    if (item.type === 'reasoning') {
      list.push({ type: 'response.output_item.added', output_index: index, item: { id: item.id, type: 'reasoning', summary: [] } });
      const text = (item.summary as Array<{ text: string }>)[0]!.text;
      list.push({ type: 'response.reasoning_summary_part.added', item_id: item.id, output_index: index, summary_index: 0, part: { type: 'summary_text', text: '' } });
      list.push({ type: 'response.reasoning_summary_text.delta', item_id: item.id, output_index: index, summary_index: 0, delta: text });
      list.push({ type: 'response.reasoning_summary_text.done', item_id: item.id, output_index: index, summary_index: 0, text });
      list.push({ type: 'response.output_item.done', output_index: index, item });
    } else if (item.type === 'message') {
      list.push({ type: 'response.output_item.added', output_index: index, item: { ...item, status: 'in_progress', content: [] } });
      list.push({ type: 'response.content_part.added', item_id: item.id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      for (const chunk of (behaviour as { chunks: string[] }).chunks) list.push({ type: 'response.output_text.delta', item_id: item.id, output_index: index, content_index: 0, delta: chunk });
      list.push({ type: 'response.output_text.done', item_id: item.id, output_index: index, content_index: 0, text: (item.content as Array<{ text: string }>)[0]!.text });
      list.push({ type: 'response.output_item.done', output_index: index, item });
    } else {
      list.push({ type: 'response.output_item.added', output_index: index, item: { ...item, arguments: '', status: 'in_progress' } });
      const args = String(item.arguments);
      const half = Math.ceil(args.length / 2);
      for (const piece of [args.slice(0, half), args.slice(half)]) list.push({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: index, delta: piece });
      list.push({ type: 'response.function_call_arguments.done', item_id: item.id, output_index: index, arguments: args });
      list.push({ type: 'response.output_item.done', output_index: index, item });
    }
  });
  list.push({ type: 'response.completed', response: { ...base, status: 'completed', output, usage: usageOf(behaviour) } });
  return list.map((event, sequence) => ({ ...event, sequence_number: sequence }));
}

/** The same scripted answer as Chat Completions. */
function chatAnswer(behaviour: Exclude<ResponsesBehaviour, { kind: 'error' }>, model: string, stream: boolean): string {
  const base = { id: `chatcmpl-${hex()}`, created: Math.floor(Date.now() / 1000), model };
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  const call = behaviour.kind === 'function_call' ? { id: behaviour.callId ?? `call_${hex()}`, type: 'function', function: { name: behaviour.name, arguments: behaviour.arguments } } : undefined;
  const finish = call ? 'tool_calls' : 'stop';
  if (!stream) {
    const message = call ? { role: 'assistant', content: null, tool_calls: [call] } : { role: 'assistant', content: (behaviour as { chunks: string[] }).chunks.join('') };
    return JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage });
  }
  const chunk = (delta: unknown, finishReason: string | null = null) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  let frames = chunk({ role: 'assistant', content: '' });
  if (call) frames += chunk({ tool_calls: [{ index: 0, ...call }] });
  else for (const piece of (behaviour as { chunks: string[] }).chunks) frames += chunk({ content: piece });
  frames += chunk({}, finish);
  frames += `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\ndata: [DONE]\n\n`;
  return frames;
}

async function handle(exchange: ProviderExchange, state: { next(model: string): ResponsesBehaviour; requests: ResponsesRecordedRequest[] }): Promise<void> {
  const { req, res } = exchange;
  const body = (await readJsonBody(req)).json;
  const model = String(body?.model ?? '');
  exchange.model = model;
  state.requests.push({ model, path: req.url ?? '', body, headers: Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, String(value)])) });
  const behaviour = state.next(model);
  if (behaviour.kind === 'error') {
    res.writeHead(behaviour.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: behaviour.message ?? 'Scripted failure', type: 'server_error', param: null, code: null } }));
    return;
  }
  if (req.url?.endsWith('/chat/completions')) {
    res.writeHead(200, { 'content-type': body?.stream ? 'text/event-stream' : 'application/json' });
    res.end(chatAnswer(behaviour, model, body?.stream === true));
    return;
  }
  if (!body?.stream) {
    const answer = events(behaviour, model).at(-1)!.response;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of events(behaviour, model)) res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
  res.end();
}

export async function startResponsesProviderDouble(): Promise<ResponsesProviderDouble> {
  return startProviderDoubleServer<ResponsesBehaviour, ResponsesRecordedRequest, { model: string }>({
    basePath: '/v1',
    unscripted: { kind: 'text', chunks: ['Hello ', 'from ', 'Responses'] },
    handle,
    abandoned: (exchange) => ({ model: exchange.model }),
    failureBody: (error) => JSON.stringify({ error: { message: String(error), type: 'server_error' } }),
  });
}
