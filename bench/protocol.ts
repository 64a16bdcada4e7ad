// What the fast provider sends, so that clients can check what arrives through each gateway.

/** The text of content chunk `index` of a paced stream. */
export function chunkText(index: number): string {
  return `tok${index} `;
}

/** The concatenated content of a stream of `chunks` content chunks. */
export function expectedStreamText(chunks: number): string {
  let text = '';
  for (let i = 0; i < chunks; i += 1) text += chunkText(i);
  return text;
}

/** The message content of every non-streaming completion. */
export const completionText = 'Hello from the fast provider.';
