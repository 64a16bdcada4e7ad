import type { Logger } from 'pino';

/**
 * SIGTERM or SIGINT runs `close` once (drain, then release connections) and exits 0, or 1 when
 * closing failed, as Procfile platforms expect. So does the death of the process that started
 * this one (see watchParent).
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
  watchParent(process.env, (parent) => {
    const message = `${what}: the process that started it (pid ${parent}) is gone; draining and exiting`;
    if (logger) logger.warn({ parent }, message);
    else process.stderr.write(`${message}\n`);
    stop('parent-exited');
  });
}

const parentPollMs = 500;

/**
 * A launcher killed outright (SIGKILL of `npm start` or `nf start`) cannot pass a signal on, and
 * its child would keep the port as an orphan nobody stops. The kernel re-parents such a child, so
 * a changed ppid means the launcher is gone. Processes started by init or running as a
 * container's PID 1 have nothing to outlive and are not watched. SWITCHBOARD_EXIT_WITH_PARENT=false
 * turns the watch off (for example under `nohup ... &` from a shell that will log out).
 */
export function watchParent(environment: NodeJS.ProcessEnv, onGone: (parent: number) => void): void {
  if (environment.SWITCHBOARD_EXIT_WITH_PARENT === 'false') return;
  const parent = process.ppid;
  if (parent <= 1) return;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone(parent);
  }, parentPollMs);
  timer.unref();
}
