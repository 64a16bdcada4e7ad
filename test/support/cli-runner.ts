import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/switchboard-cli.js';

// The `switchboard` CLI, run two ways: as installed (node bin/switchboard.mjs, as npm links it) in
// a child process, asynchronously so the gateway in this process keeps serving; and through its
// main() in this process, for the many calls where a process start would only cost time.

const bin = fileURLToPath(new URL('../../bin/switchboard.mjs', import.meta.url));

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The installed CLI with PATH and `environment` only (an empty value leaves the variable out). */
export function runCliBinary(args: string[], environment: Record<string, string>, timeoutMs = 30_000): Promise<CliRun> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '' };
  for (const [name, value] of Object.entries(environment)) if (value !== '') env[name] = value;
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env, timeout: timeoutMs }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

/** The CLI's main() with `environment` as its whole environment, its output captured. */
export async function runCliInProcess(args: string[], environment: Record<string, string>): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, environment, { out: (text) => (stdout += `${text}\n`), err: (text) => (stderr += `${text}\n`) });
  return { code, stdout, stderr };
}
