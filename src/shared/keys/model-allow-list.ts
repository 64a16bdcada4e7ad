// A key's allow-list: catalog model ids or glob patterns (`*` any run of characters, `?` one), as
// in `svc/claude-*`. Aliases are checked by the model they resolve to, so an allow-list cannot be
// side-stepped through an alias. null allows every model.

const compiled = new Map<string, RegExp>();

function patternOf(glob: string): RegExp {
  let pattern = compiled.get(glob);
  if (!pattern) {
    const source = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
    pattern = new RegExp(`^${source}$`);
    // Patterns are few (per key, set by an admin); the map is bounded by what admins wrote.
    if (compiled.size < 10_000) compiled.set(glob, pattern);
  }
  return pattern;
}

export function modelAllowed(allowed: readonly string[] | null, modelId: string): boolean {
  return allowed === null || allowed.some((glob) => glob === modelId || patternOf(glob).test(modelId));
}
