import { GatewayError } from '../errors.js';

// A store (PostgreSQL) that cannot be reached is a temporary condition of the gateway, not a bug:
// clients get 503 service_unavailable with retry-after, never 500.

export function storeUnavailable(error: unknown, what: string): GatewayError {
  if (error instanceof GatewayError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new GatewayError('service_unavailable', `The gateway cannot reach its database to ${what} (${reason}). Try again shortly.`, { retryAfterSeconds: 1 });
}
