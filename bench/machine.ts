import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './processes.js';

// What a run was measured on and with: hardware, versions of every program, the commit, the command.

/** The first line a program prints for its version, or `absent` when it is not installed. */
export function versionOf(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.error) return 'absent';
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
  return output ? output.split('\n')[0]! : 'unknown';
}

export function machineDescription(switchboardDir: string, startedAt: number): Record<string, string> {
  let commit: string;
  let dirty = '';
  if (switchboardDir === repoRoot) {
    commit = versionOf('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD']);
    const status = spawnSync('git', ['-C', repoRoot, 'status', '--porcelain', '--', 'src'], { encoding: 'utf8' }).stdout ?? '';
    if (status.trim()) dirty = ' (with uncommitted changes in src: the working tree as it was during the run)';
  } else {
    commit = `tree ${switchboardDir}`;
    try {
      commit += ` (${readFileSync(join(switchboardDir, '.bench-commit'), 'utf8').trim()})`;
    } catch {
      // no marker
    }
  }
  let portkeyVersion = 'absent';
  try {
    portkeyVersion = (JSON.parse(readFileSync(join(repoRoot, 'node_modules/@portkey-ai/gateway/package.json'), 'utf8')) as { version: string }).version;
  } catch {
    // not installed
  }
  return {
    cpu: `${cpus()[0]?.model ?? 'unknown'} x ${cpus().length}`,
    memory: `${Math.round(Number(readFileSync('/proc/meminfo', 'utf8').match(/MemTotal:\s+(\d+)/)?.[1] ?? 0) / 1024 / 1024)} GiB`,
    kernel: versionOf('uname', ['-r']),
    node: process.version,
    nginx: versionOf('nginx', ['-v']),
    wrk: versionOf('wrk', ['--version']).split(' [')[0]!,
    redis: versionOf('redis-server', ['--version']),
    portkey: portkeyVersion,
    commit: `${commit}${dirty}`,
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    startedAt: new Date(startedAt).toISOString(),
  };
}
