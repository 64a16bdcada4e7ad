import pino, { type Logger } from 'pino';

// Structured logs. Authorization headers and key material are redacted wherever they appear;
// prompts are never logged by the gateway's own code.
export function createLogger(level: string, name: string): Logger {
  return pino({
    name,
    level,
    redact: { paths: ['authorization', '*.authorization', 'headers.authorization', 'key', '*.key', 'apiKey', '*.apiKey'], censor: '[redacted]' },
  });
}
