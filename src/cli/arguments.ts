import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CliError } from './admin-client.js';

// Command-line parsing with messages that say what to do. node:util's parseArgs takes
// `--budget -5` for a missing value followed by an option ("ambiguous"); a negative number after
// an option that takes a value is that option's value, which the command then judges.

export type Options = NonNullable<ParseArgsConfig['options']>;

/** Options every command takes. */
export const commonOptions = { json: { type: 'boolean' }, url: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const satisfies Options;

const numberLike = /^-(?:\d|\.\d)/;

/** `--opt -5` becomes `--opt=-5` for options that take a value. */
function attachNegativeNumbers(args: string[], options: Options): string[] {
  const result: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '--') return [...result, ...args.slice(i)];
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : undefined;
    const next = args[i + 1];
    if (name && options[name]?.type === 'string' && next !== undefined && numberLike.test(next)) {
      result.push(`${arg}=${next}`);
      i += 1;
    } else {
      result.push(arg);
    }
  }
  return result;
}

function explain(error: Error & { code?: string }): string {
  const option = /'(--?[\w-]+)/.exec(error.message)?.[1];
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
    if (/ambiguous/.test(error.message)) return `${option} needs a value; to give one that starts with '-', write ${option}=VALUE`;
    if (/missing/.test(error.message)) return `${option} needs a value`;
  }
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) return `unknown option '${option}'`;
  // Node's other messages go on to explain '--' for positionals; the first sentence says what is wrong.
  const first = error.message.split(/\.\s/)[0]!.replace(/\.$/, '');
  return `${first.charAt(0).toLowerCase()}${first.slice(1)}`;
}

/** Parses a command's arguments, with the common options added. */
export function parseCommandLine<O extends Options>(args: string[], options: O, positionals: number) {
  const all = { ...commonOptions, ...options };
  let parsed;
  try {
    parsed = parseArgs({ args: attachNegativeNumbers(args, all), options: all, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliError(`${explain(error as Error & { code?: string })}. See 'switchboard --help'.`);
  }
  if (parsed.positionals.length > positionals) throw new CliError(`unexpected argument '${parsed.positionals[positionals]}'. See 'switchboard --help'.`);
  return parsed;
}

/** "none" clears a setting; otherwise a number at least `minimum` (whole when `integer`). */
export function numberOrNone(option: string, raw: string | undefined, rule: { integer: boolean; minimum: number; unit?: string }): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw.trim().toLowerCase() === 'none') return null;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || (rule.integer && !Number.isInteger(value)) || value < rule.minimum) {
    const kind = rule.integer ? 'a whole number' : `a number${rule.unit ? ` of ${rule.unit}` : ''}`;
    throw new CliError(`invalid value for --${option}: '${raw}'; it must be ${kind}, ${rule.minimum} or more, or 'none' to clear it`);
  }
  return value;
}

/** A positive whole number option without 'none' (e.g. --limit). */
export function positiveInteger(option: string, raw: string | undefined, maximum: number): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(value) || value < 1 || value > maximum) {
    throw new CliError(`invalid value for --${option}: '${raw}'; it must be a whole number from 1 to ${maximum}`);
  }
  return value;
}
