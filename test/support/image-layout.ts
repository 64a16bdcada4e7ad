import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';

// Reads the Dockerfile the way `docker build` does (enough of it for this repository) and lays the
// final stage's files out in a folder, so a test can start the gateway from exactly what the image
// would hold. No Docker engine needed; the file list comes from the Dockerfile itself, so it cannot
// drift from what the image copies.

export interface Instruction {
  keyword: string;
  flags: Record<string, string>;
  /** The arguments after the flags: words, or the parsed JSON array of the exec form. */
  args: string[];
  raw: string;
}

export interface Stage {
  name?: string;
  base: string;
  instructions: Instruction[];
}

function parseInstruction(line: string): Instruction {
  const keyword = line.split(/\s+/)[0]!;
  let remainder = line.slice(keyword.length).trim();
  const flags: Record<string, string> = {};
  for (;;) {
    const flag = /^--([a-z-]+)(?:=(\S+))?\s*/.exec(remainder);
    if (!flag) break;
    flags[flag[1]!] = flag[2] ?? '';
    remainder = remainder.slice(flag[0].length);
  }
  const args = remainder.startsWith('[') ? (JSON.parse(remainder) as string[]) : remainder.split(/\s+/).filter(Boolean);
  return { keyword: keyword.toUpperCase(), flags, args, raw: line };
}

export function parseDockerfile(text: string): Stage[] {
  const logical = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of logical) {
    const instruction = parseInstruction(line);
    if (instruction.keyword === 'FROM') {
      const [base, as, name] = instruction.args;
      stages.push({ base: base!, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else {
      if (stages.length === 0) throw new Error(`Dockerfile: ${instruction.keyword} before FROM`);
      stages.at(-1)!.instructions.push(instruction);
    }
  }
  return stages;
}

/** ENV A=b C=d (and the legacy `ENV A b`) of a stage, in order. */
export function stageEnvironment(stage: Stage): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const instruction of stage.instructions.filter((entry) => entry.keyword === 'ENV')) {
    if (instruction.args.length === 2 && !instruction.args[0]!.includes('=')) environment[instruction.args[0]!] = instruction.args[1]!;
    else for (const pair of instruction.args) environment[pair.slice(0, pair.indexOf('='))] = pair.slice(pair.indexOf('=') + 1);
  }
  return environment;
}

export function workdir(stage: Stage): string {
  return stage.instructions.filter((entry) => entry.keyword === 'WORKDIR').at(-1)?.args[0] ?? '/';
}

/** .dockerignore as Docker applies it: patterns rooted at the context, `**` across folders, `!` re-includes, last match wins. */
export function dockerignoreMatcher(text: string): (path: string) => boolean {
  const rules = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = posix.normalize(line.slice(negate ? 1 : 0).replace(/^\/+/, ''));
      const source = pattern
        .split('/')
        .map((part) => (part === '**' ? '(?:.*)' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')))
        .join('/')
        .replace(/\(\?:\.\*\)\//g, '(?:.*/)?');
      return { negate, pattern: new RegExp(`^${source}$`) };
    });
  return (path) => {
    // A path is excluded when it or any folder above it matches.
    const parts = path.split('/');
    let excluded = false;
    for (const rule of rules) {
      for (let length = 1; length <= parts.length; length++) {
        if (rule.pattern.test(parts.slice(0, length).join('/'))) {
          excluded = !rule.negate;
          break;
        }
      }
    }
    return excluded;
  };
}

/** The packages `npm ci --omit=dev` installs at the top of node_modules, per the lockfile. */
export function productionPackages(lockfile: { packages: Record<string, { dev?: boolean; link?: boolean }> }): string[] {
  return Object.entries(lockfile.packages)
    .filter(([path, entry]) => /^node_modules\/(?:@[^/]+\/)?[^/]+$/.test(path) && !entry.dev)
    .map(([path]) => path.slice('node_modules/'.length));
}

export interface Assembled {
  /** The folder standing for the image's WORKDIR. */
  root: string;
  /** Maps an absolute path inside the image to the folder on this machine. */
  toHost(imagePath: string): string;
  /** Context paths each COPY brought in (after .dockerignore), for assertions. */
  copied: string[];
}

/** The lockfile's production packages in `modules`, linked from this checkout's node_modules. */
function linkProductionModules(context: string, modules: string): void {
  const lockfile = JSON.parse(readFileSync(join(context, 'package-lock.json'), 'utf8'));
  for (const name of productionPackages(lockfile)) {
    const installed = join(context, 'node_modules', name);
    if (!existsSync(installed)) continue; // an optional package for another platform
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(realpathSync(installed), join(modules, name), 'dir');
  }
}

const productionInstall = /\bnpm ci\b[^&|;]*--omit=dev/;

/**
 * Lays out the final stage, instruction by instruction: COPY from the build context (honouring
 * .dockerignore) is copied; `RUN npm ci --omit=dev`, or COPY --from a stage that ran it of its
 * node_modules, becomes the lockfile's production packages, linked from this checkout's
 * node_modules. Other RUN lines (folders, owners) do not change which files exist.
 */
export function assembleFinalStage(context: string, stages: Stage[], target: string): Assembled {
  const final = stages.at(-1)!;
  const imageRoot = workdir(final);
  const toHost = (imagePath: string) => join(target, relative(imageRoot, posix.resolve(imageRoot, imagePath)));
  const ignored = dockerignoreMatcher(existsSync(join(context, '.dockerignore')) ? readFileSync(join(context, '.dockerignore'), 'utf8') : '');
  const copied: string[] = [];
  mkdirSync(target, { recursive: true });
  for (const instruction of final.instructions) {
    if (instruction.keyword === 'RUN') {
      if (productionInstall.test(instruction.raw)) linkProductionModules(context, toHost('node_modules'));
      continue;
    }
    if (instruction.keyword !== 'COPY' && instruction.keyword !== 'ADD') continue;
    const sources = instruction.args.slice(0, -1);
    const destination = instruction.args.at(-1)!;
    if (instruction.flags.from !== undefined) {
      const stage = stages.find((candidate) => candidate.name === instruction.flags.from);
      if (!stage) throw new Error(`COPY --from=${instruction.flags.from}: no such stage`);
      const installs = stage.instructions.some((entry) => entry.keyword === 'RUN' && productionInstall.test(entry.raw));
      if (sources.length !== 1 || !sources[0]!.endsWith('/node_modules') || !installs) throw new Error(`Only node_modules from a stage that runs npm ci --omit=dev can be assembled: ${instruction.raw}`);
      linkProductionModules(context, toHost(destination));
      continue;
    }
    const intoFolder = destination.endsWith('/') || sources.length > 1;
    for (const source of sources) {
      if (ignored(source)) throw new Error(`COPY ${source}: excluded by .dockerignore, so the build would fail`);
      const from = join(context, source);
      const isFolder = statSync(from).isDirectory();
      const to = intoFolder && !isFolder ? join(toHost(destination), posix.basename(source)) : toHost(destination);
      cpSync(from, to, {
        recursive: true,
        filter: (path) => {
          const inContext = relative(context, path).split('\\').join('/');
          if (inContext && ignored(inContext)) return false;
          if (inContext && statSync(path).isFile()) copied.push(inContext);
          return true;
        },
      });
    }
  }
  return { root: target, toHost, copied };
}
