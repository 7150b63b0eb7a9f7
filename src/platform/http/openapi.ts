import type { SwaggerTransform } from '@fastify/swagger';

// How routes become the OpenAPI document's operations (docs/openapi.md). The transform sees each route
// with its options and returns what the document shows; it never changes the route itself (its schema
// objects are the ones Fastify validates and serializes with: copies only).

/**
 * OpenAPI has no wildcard path segment: a route ending in `/*` (the embedded store's downloads,
 * `/storage/:bucket/*`) is documented as ending in `/{key}`, and its `*` parameter as `key`: the rest of
 * the path, which may hold `/`.
 */
const WILDCARD_PARAMETER = 'key';

interface ObjectSchema {
  properties?: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
}

function renameWildcard(params: ObjectSchema): ObjectSchema {
  const { '*': wildcard, ...others } = params.properties ?? {};
  return {
    ...params,
    properties: { ...others, [WILDCARD_PARAMETER]: wildcard ?? { type: 'string' } },
    required: [...(params.required ?? []).filter((name) => name !== '*'), WILDCARD_PARAMETER],
  };
}

export const documentRoute: SwaggerTransform = ({ schema, url }) => {
  if (!url.endsWith('/*')) return { schema, url };
  return {
    url: `${url.slice(0, -1)}:${WILDCARD_PARAMETER}`,
    schema: { ...schema, params: renameWildcard((schema.params ?? {}) as ObjectSchema) },
  };
};
