import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { DATE_RANGE_TEXT, isValidDate, isValidDateTime } from './date-range.ts';
import { findUnsafeInput } from './text-safety.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

type JsonSchema = Record<string, unknown>;

/**
 * Two validators: URL parts (query, params, headers) arrive as text and are coerced to their declared
 * types; bodies are JSON and are validated as sent, so `"1"` is not an integer there. `verbose` keeps
 * each failing keyword's schema on the error, which the formatter turns into "must be one of: …".
 */
function ajvInstances() {
  const common = {
    allErrors: false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    verbose: true,
  } as const;
  const url = addFormats(new Ajv({ ...common, coerceTypes: 'array' }));
  const body = addFormats(new Ajv({ ...common, coerceTypes: false }));
  for (const ajv of [url, body]) {
    ajv.addKeyword({ keyword: 'x-examples' });
    // Stricter than ajv-formats: the year must be 0001–9999 (see date-range.ts).
    ajv.addFormat('date', { type: 'string', validate: isValidDate });
    ajv.addFormat('date-time', { type: 'string', validate: isValidDateTime });
  }
  return { url, body };
}

/** An error of our own, shaped like Ajv's so one formatter describes both. */
function issue(instancePath: string, keyword: string, message: string, parentSchema?: unknown): ErrorObject {
  return { instancePath, schemaPath: '', keyword, params: {}, message, parentSchema } as ErrorObject;
}

// What a number in a URL may look like. Ajv's own coercion takes anything `+value` accepts ("0x10",
// " 1", "1e308", "Infinity"), which let `page=Infinity` reach the database as an OFFSET.
const INTEGER_TEXT = /^-?\d{1,16}$/;
const NUMBER_TEXT = /^-?\d{1,16}(\.\d{1,16})?$/;

function numericProperties(schema: JsonSchema): Map<string, 'integer' | 'number'> {
  const out = new Map<string, 'integer' | 'number'>();
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  for (const [name, property] of Object.entries(properties)) {
    if (property.type === 'integer' || property.type === 'number') out.set(name, property.type);
  }
  return out;
}

type Validator = ((data: unknown, context?: unknown) => boolean) & {
  errors?: ErrorObject[] | null;
  schemaEnv?: unknown;
};

/**
 * Wraps Ajv's validator with the rules every route shares, so no route can forget them: no NUL or lone
 * surrogate anywhere in the input (PostgreSQL cannot store the first, the second is not text), no JSON
 * nested deeper than MAX_JSON_DEPTH (checked before Ajv or anything else walks it), and numbers in URLs
 * written as plain decimals.
 */
function guarded(validate: ValidateFunction, schema: JsonSchema, isUrlPart: boolean): Validator {
  const numeric = isUrlPart ? numericProperties(schema) : new Map<string, 'integer' | 'number'>();
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const wrapped: Validator = (data, context) => {
    const unsafe = findUnsafeInput(data);
    if (unsafe !== undefined) {
      wrapped.errors = [issue(unsafe.path, unsafe.problem, unsafe.message)];
      return false;
    }
    if (numeric.size > 0 && data && typeof data === 'object') {
      for (const [name, type] of numeric) {
        const raw = (data as Record<string, unknown>)[name];
        const text = Array.isArray(raw) && raw.length === 1 ? raw[0] : raw;
        if (typeof text === 'string' && !(type === 'integer' ? INTEGER_TEXT : NUMBER_TEXT).test(text)) {
          wrapped.errors = [
            issue(`/${name}`, 'type', `must be ${describeSchema(properties[name]!)}`, properties[name]),
          ];
          return false;
        }
      }
    }
    const ok = (validate as unknown as Validator)(data, context);
    wrapped.errors = validate.errors ?? null;
    return ok;
  };
  // Fastify passes the parent object to validators that have one, so Ajv can coerce the root value.
  wrapped.schemaEnv = (validate as unknown as Validator).schemaEnv;
  return wrapped;
}

/**
 * The schema compiler of every route (given to Fastify as the schema controller's factory). Each
 * validator is compiled by Ajv when first used, not while the app starts: compiling ~250 of them was a
 * third of the start time (docs/performance.md#start-and-footprint). `compileAll` compiles whatever is
 * still pending, so a test can prove every schema compiles.
 */
export function schemaCompiler(): FastifySchemaCompiler<JsonSchema> & { compileAll(): void } {
  const ajv = ajvInstances();
  const pending = new Set<() => Validator>();
  const compiler = ({ schema, httpPart }: { schema: JsonSchema; httpPart?: string }) => {
    const isBody = httpPart === 'body';
    let compiled: Validator | undefined;
    const compile = (): Validator => {
      if (!compiled) {
        compiled = guarded((isBody ? ajv.body : ajv.url).compile(schema), schema, !isBody);
        pending.delete(compile);
      }
      return compiled;
    };
    pending.add(compile);
    const lazy: Validator = (data, context) => {
      const validate = compile();
      const ok = validate(data, context);
      lazy.errors = validate.errors ?? null;
      return ok;
    };
    // Fastify passes the parent object only to validators that carry a schemaEnv, and Ajv needs it to
    // coerce a root value; it is harmless for the others.
    lazy.schemaEnv = {};
    return lazy;
  };
  return Object.assign(compiler as never as FastifySchemaCompiler<JsonSchema>, {
    compileAll: () => {
      for (const compile of [...pending]) compile();
    },
  });
}

/**
 * Validates the path parameters and the query string now, as Fastify would after preValidation: for
 * routes whose preValidation step does work of its own first (reading an upload), so a bad uid or an
 * unknown parameter is refused before a byte of the file is read, in the same error as everywhere.
 */
export function assertUrlParts(request: FastifyRequest): void {
  for (const part of ['params', 'querystring'] as const) {
    const validate = request.getValidationFunction(part) as Validator | undefined;
    if (!validate) continue;
    const data = part === 'params' ? request.params : request.query;
    if (!validate(data)) {
      throw Object.assign(new Error('validation failed'), {
        validation: validate.errors ?? [],
        validationContext: part,
        statusCode: 400,
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Messages a person can act on: the field path and what is allowed, from the schema that failed.

const FORMAT_TEXT: Record<string, string> = {
  date: 'a date (YYYY-MM-DD)',
  'date-time': 'a date-time with a time zone (e.g. 2026-03-05T14:30:00Z)',
  uuid: 'a UUID',
  email: 'an email address',
  uri: 'a URL',
  'uri-reference': 'a URL',
  time: 'a time (HH:MM:SS)',
};

function rangeText(schema: JsonSchema): string {
  const min = schema.minimum ?? schema.exclusiveMinimum;
  const max = schema.maximum ?? schema.exclusiveMaximum;
  if (typeof min === 'number' && typeof max === 'number') return ` from ${min} to ${max}`;
  if (typeof min === 'number') return ` of at least ${min}`;
  if (typeof max === 'number') return ` of at most ${max}`;
  return '';
}

function mentionsDates(schema: unknown): boolean {
  return /"format":"date(-time)?"/.test(JSON.stringify(schema ?? null));
}

/** "one of: a, b", "a UUID", "an integer from 1 to 100", "a date … or null". */
export function describeSchema(schema: JsonSchema | undefined): string {
  const text = describeShape(schema);
  return mentionsDates(schema) ? `${text}, ${DATE_RANGE_TEXT}` : text;
}

function describeShape(schema: JsonSchema | undefined): string {
  if (!schema || typeof schema !== 'object') return 'valid';
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return `one of: ${schema.enum.map(String).join(', ')}`;
  const branches = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(branches)) {
    const consts = branches.filter((b) => 'const' in b).map((b) => String(b.const));
    const others = branches.filter((b) => !('const' in b));
    const parts: string[] = [];
    if (consts.length > 0)
      parts.push(consts.length === 1 ? JSON.stringify(consts[0]) : `one of: ${consts.join(', ')}`);
    for (const b of others) {
      const text = describeShape(b);
      if (!parts.includes(text)) parts.push(text);
    }
    return parts.join(' or ');
  }
  const type = schema.type;
  if (typeof schema.format === 'string' && FORMAT_TEXT[schema.format]) return FORMAT_TEXT[schema.format]!;
  switch (type) {
    case 'integer':
      return `an integer${rangeText(schema)}`;
    case 'number':
      return `a number${rangeText(schema)}`;
    case 'boolean':
      return 'true or false';
    case 'null':
      return 'null';
    case 'array':
      return 'an array';
    case 'object':
      return 'an object';
    case 'string':
      return 'a string';
    default:
      return Array.isArray(type) ? type.join(' or ') : 'valid';
  }
}

export interface ValidationIssue {
  field: string;
  message: string;
  /** An unknown property of the query string: answered as `unknown_parameter`. */
  unknownParameter?: string;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function keywordMessage(error: ErrorObject): string {
  const schema = (error.parentSchema ?? {}) as JsonSchema;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not an allowed field';
    case 'anyOf':
    case 'oneOf':
    case 'type':
    case 'format':
    case 'const':
    case 'enum':
      return `must be ${describeSchema(schema)}`;
    case 'minimum':
    case 'exclusiveMinimum':
    case 'maximum':
    case 'exclusiveMaximum':
      return `must be ${describeSchema(schema)}`;
    case 'minLength':
      return params.limit === 1
        ? 'must not be empty'
        : `must be at least ${plural(Number(params.limit), 'character')}`;
    case 'maxLength':
      return `must be at most ${plural(Number(params.limit), 'character')}`;
    case 'minItems':
      return `must have at least ${plural(Number(params.limit), 'item')}`;
    case 'maxItems':
      return `must have at most ${plural(Number(params.limit), 'item')}`;
    case 'minProperties':
      return `must have at least ${plural(Number(params.limit), 'field')}`;
    case 'maxProperties':
      return `must have at most ${plural(Number(params.limit), 'field')}`;
    case 'pattern':
      return typeof schema.description === 'string' && schema.description.length < 120
        ? `must match ${String(params.pattern)} (${schema.description})`
        : `must match the pattern ${String(params.pattern)}`;
    case 'uniqueItems':
      return 'must not contain duplicate items';
    default:
      return error.message ?? 'is invalid';
  }
}

/** A pointer `/line_items/0/sku` as a field path `line_items.0.sku`; unprintable characters replaced. */
function fieldPath(pointer: string): string {
  return pointer
    .replace(/^\//, '')
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.')
    .replace(/[\u0000-\u001f\ud800-\udfff]/g, '\ufffd');
}

/** The JSON type of a value, as a schema's `type` names it. */
function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/**
 * A union of structured shapes (an object or an array of objects, as the line-item routes take) whose
 * value is of exactly one branch's type: that branch's own errors name the fields (`[2].quantity`), not
 * the union as a whole ("must be an object or an array"). The union's error and the other branches'
 * are dropped. Other unions (a date or a date-time, a value or null) are described as a whole below.
 */
function narrowUnions(errors: ErrorObject[], isUnion: (e: ErrorObject) => boolean): ErrorObject[] {
  let out = errors;
  for (const union of errors) {
    if (!isUnion(union) || !union.schemaPath || !Array.isArray(union.schema)) continue;
    const kind = jsonType(union.data);
    if (kind !== 'object' && kind !== 'array') continue;
    const branches = union.schema as JsonSchema[];
    const matching = branches.flatMap((b, i) => (b && b.type === kind ? [i] : []));
    if (matching.length !== 1) continue;
    const own = `${union.schemaPath}/${matching[0]}/`;
    const inBranch = (e: ErrorObject) =>
      e.schemaPath.startsWith(`${union.schemaPath}/`) && !e.schemaPath.startsWith(own);
    const kept = out.filter((e) => e !== union && !inBranch(e));
    // Only when the branch itself explains the failure.
    if (kept.some((e) => e.schemaPath.startsWith(own))) out = kept;
  }
  return out;
}

/** `2.quantity` of a body that is an array → `[2].quantity`, as the services name a batch's items. */
function indexedPath(path: string): string {
  return path.replace(/^(\d+)(?=\.|$)/, '[$1]');
}

/**
 * Ajv's errors → one issue per field. For `anyOf`/`oneOf`, Ajv first reports every branch's failure
 * ("must be equal to constant" once per allowed value) and then the anyOf itself: the branches are
 * dropped and the anyOf is described from its schema instead.
 */
export function describeValidation(allErrors: ErrorObject[], part: string | undefined): ValidationIssue[] {
  const isUnion = (e: ErrorObject) => e.keyword === 'anyOf' || e.keyword === 'oneOf';
  const errors = narrowUnions(allErrors, isUnion);
  // Nested unions at one path (Nullable(Union(date, date-time))) are reported innermost first: the
  // last one describes every allowed shape.
  const unions = errors.filter(
    (e, i) =>
      isUnion(e) &&
      !errors.slice(i + 1).some((later) => isUnion(later) && later.instancePath === e.instancePath),
  );
  const kept = errors.filter(
    (e) =>
      unions.includes(e) ||
      !errors.some(
        (u) =>
          isUnion(u) &&
          (e.instancePath === u.instancePath || e.instancePath.startsWith(`${u.instancePath}/`)),
      ),
  );
  const out: ValidationIssue[] = [];
  const seen = new Set<string>();
  for (const error of kept) {
    const params = error.params as Record<string, unknown>;
    const name =
      typeof params.missingProperty === 'string'
        ? params.missingProperty
        : typeof params.additionalProperty === 'string'
          ? params.additionalProperty
          : undefined;
    const path = indexedPath(
      [fieldPath(error.instancePath), name ? fieldPath(`/${name}`) : ''].filter(Boolean).join('.'),
    );
    const field = path || part || 'body';
    const message = keywordMessage(error);
    const key = `${field}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const unknown = error.keyword === 'additionalProperties' && part === 'querystring' && name !== undefined;
    out.push({ field, message, ...(unknown ? { unknownParameter: field } : {}) });
  }
  return out;
}
