import type { MediaSource } from './parts.js';

/** `data:<type>[;params];base64,<data>`: how OpenAI-format clients inline images, audio and files. */
export const dataUrlPattern = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

/** A URL as a media source: inline data becomes base64, anything else stays a URL. */
export function mediaFromUrl(url: string): MediaSource {
  const data = dataUrlPattern.exec(url);
  return data ? { kind: 'base64', mediaType: data[1]!, data: data[2]! } : { kind: 'url', url };
}
