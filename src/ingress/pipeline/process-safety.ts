import type { Logger } from 'pino';

// A request handler's exception that escapes every catch (a callback uWS calls outside our wrapper,
// a timer, an event listener) reaches the process as an uncaught exception or an unhandled
// rejection, and Node's default is to exit: every open stream of every client would die with it.
// The gateway logs it and keeps serving instead; the request wrapper answers the request itself.

let installed = false;

export function keepProcessAliveOnHandlerErrors(logger: Logger): void {
  if (installed) return;
  installed = true;
  process.on('uncaughtException', (error) => {
    logger.error({ err: describe(error) }, 'uncaught exception (the gateway keeps running)');
  });
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: describe(reason) }, 'unhandled promise rejection (the gateway keeps running)');
  });
}

/** Name and stack only: an error's own fields could carry request data. */
export function describe(error: unknown): { name: string; stack?: string } {
  if (error instanceof Error) return { name: error.name, stack: error.stack };
  return { name: typeof error };
}
