// Provider error text is untrusted: it can echo our own API key back, name internal hosts, or be a
// 200 KB HTML page. These helpers make such text fit to log, store or show.

/** Shapes of credentials that providers (and this gateway) issue, plus generic key=value secrets. */
const secretPatterns: RegExp[] = [
  // OpenAI, Anthropic (sk-ant-...), this gateway's own sk-service- keys and most compatible providers.
  /\bsk-[A-Za-z0-9_-]{8,}/g,
  // Google API keys.
  /\bAIza[0-9A-Za-z_-]{20,}/g,
  // Groq, xAI, Together, GitHub and Slack style prefixes.
  /\b(?:gsk|xai|tgp_v1|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{8,}/g,
  /\bBearer\s+[^\s"',;]+/gi,
  // JWTs.
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g,
];

/** `api_key=...`, `"x-api-key": "..."`, `?key=...`: the name stays, the value goes. */
const namedSecret = /\b((?:x-)?api[-_]?key|access[-_]?token|secret|password|key|token|authorization)(["']?\s*[:=]\s*["']?)([^\s"'&,;}]+)/gi;

/**
 * A long run of letters and digits mixing both reads as a key or token, whatever its prefix. Runs
 * with hyphens must be longer, so model names such as claude-3-5-sonnet-20241022 stay readable.
 */
const opaqueTokens = [/\b(?=\w*\d)(?=\w*[A-Za-z])\w{32,}\b/g, /\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{48,}\b/g];

export const redactedMark = '[redacted]';

/**
 * Removes anything key-like from `text`. `knownSecrets` (the provider's configured key) are removed
 * verbatim first, so a key of any shape never survives.
 */
export function redactSecrets(text: string, knownSecrets: ReadonlyArray<string | undefined> = []): string {
  let result = text;
  for (const secret of knownSecrets) {
    // Very short "keys" would redact ordinary words; real keys are far longer.
    if (secret && secret.length >= 8) result = result.split(secret).join(redactedMark);
  }
  for (const pattern of secretPatterns) result = result.replace(pattern, redactedMark);
  result = result.replace(namedSecret, (_match, name: string, separator: string) => `${name}${separator}${redactedMark}`);
  for (const pattern of opaqueTokens) result = result.replace(pattern, redactedMark);
  return result;
}

/** Whitespace folded and the length capped, so one error cannot flood a message, log line or ledger row. */
export function capText(text: string, limit: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat;
}

/** An HTML page (a proxy's or load balancer's error page) says nothing a client can act on. */
export function looksLikeHtml(text: string): boolean {
  return /^\s*</.test(text) || /<(?:!doctype|html|head|body)\b/i.test(text.slice(0, 2000));
}
