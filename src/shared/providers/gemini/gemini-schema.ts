// JSON Schema (as OpenAI tools and json_schema response formats carry it) -> Gemini's Schema, an
// OpenAPI 3.0 subset. Gemini parses it as a protocol buffer and answers 400 "Unknown name" for any
// keyword outside that subset, and OpenAI strict-mode schemas always carry additionalProperties,
// so unknown keywords are dropped rather than passed on.

const keptKeywords = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'default',
  'minimum',
  'maximum',
  'required',
  'propertyOrdering',
]);

type Schema = Record<string, unknown>;

function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function toGeminiSchema(schema: unknown): Schema {
  if (!isObject(schema)) return {};
  const result: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (keptKeywords.has(key)) result[key] = value;
  }
  // JSON Schema spells "string or null" as a type list; OpenAPI 3.0 has one type plus nullable.
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((type) => type !== 'null');
    if (types.length === 1) result.type = types[0];
    else delete result.type;
    if (types.length < schema.type.length) result.nullable = true;
  }
  if (schema.const !== undefined && result.enum === undefined) result.enum = [schema.const];
  // An empty properties map is refused outright ("should be non-empty for OBJECT type").
  if (hasProperties(schema)) {
    result.properties = Object.fromEntries(Object.entries(schema.properties as Schema).map(([name, value]) => [name, toGeminiSchema(value)]));
  }
  if (schema.items !== undefined) result.items = toGeminiSchema(schema.items);
  // Gemini knows anyOf only; oneOf's "exactly one" cannot be expressed and is relaxed to "at least one".
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) result.anyOf = alternatives.map(toGeminiSchema);
  return result;
}

/** Gemini rejects an OBJECT schema with no properties, which is how argument-less tools are declared. */
export function hasProperties(schema: unknown): boolean {
  return isObject(schema) && isObject(schema.properties) && Object.keys(schema.properties).length > 0;
}
