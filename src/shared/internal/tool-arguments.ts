/**
 * A tool call's JSON arguments as the object formats with structured input want (Anthropic's
 * `input`). Broken or non-object JSON, which a model may have emitted earlier in a conversation,
 * becomes {} so that replaying the conversation does not fail.
 */
export function toolArgumentsObject(argumentsText: string): unknown {
  try {
    const parsed: unknown = JSON.parse(argumentsText);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}
