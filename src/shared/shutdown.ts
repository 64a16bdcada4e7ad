import type { Logger } from 'pino';

/**
 * SIGTERM or SIGINT runs `close` once (drain, then release connections) and exits 0, or 1 when
 * closing failed, as Procfile platforms expect.
 */
export function exitOnShutdownSignal(logger: Logger | undefined, what: string, close: (signal: string) => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    close(signal).then(
      () => process.exit(0),
      (error: Error) => {
        if (logger) logger.error({ err: error }, `${what} shutdown failed`);
        else process.stderr.write(`${what} shutdown failed: ${error.message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
