import { readdirSync, readFileSync } from 'node:fs';

// CPU and memory of processes, read from /proc (Linux). CPU is utime + stime of every thread of a
// process, in clock ticks (USER_HZ, 100 per second on Linux), so a figure is only as fine as 10 ms
// per process per run: runs are long enough that this stays below a few per cent.

export const ticksPerSecond = 100;
export const microsPerTick = 1_000_000 / ticksPerSecond;

/** utime + stime of one process in ticks, or undefined when it is gone. */
export function cpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces; fields after its closing parenthesis are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

export function totalCpuTicks(pids: number[]): number {
  let total = 0;
  for (const pid of pids) total += cpuTicks(pid) ?? 0;
  return total;
}

/** Resident set size of one process in bytes. */
export function rssBytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+) kB/.exec(status);
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export function totalRssBytes(pids: number[]): number {
  let total = 0;
  for (const pid of pids) total += rssBytes(pid);
  return total;
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** A process and all its descendants (nginx's workers, for instance). */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const parent = parentOf(pid);
    if (parent === undefined) continue;
    const list = children.get(parent) ?? [];
    list.push(pid);
    children.set(parent, list);
  }
  const result: number[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    if (cpuTicks(pid) === undefined) continue;
    result.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return result;
}

/** Processes whose command name is `comm` and whose command line contains `argument` (read only). */
export function findProcesses(comm: string, argument: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== comm) continue;
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(argument)) continue;
      found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Busy and total ticks of the whole machine (all cores), from /proc/stat. */
export function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = values as [number, number, number, number, number, number, number, number];
  const busy = user + nice + system + irq + softirq + (steal ?? 0);
  return { busy, total: busy + idle + (iowait ?? 0) };
}

/**
 * The soft limit on open files this process (and so every process it starts) runs under, or
 * undefined when unlimited or unreadable: an idle stream holds a socket in the load client, the
 * ingress and the provider double each.
 */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((candidate) => candidate.startsWith('Max open files'));
    const soft = line?.split(/\s{2,}/)[1];
    return soft && /^\d+$/.test(soft) ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}
