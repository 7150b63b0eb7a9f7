import fastJsonStringify, { type Options as SerializerOptions } from 'fast-json-stringify';
import type { FastifyServerOptions } from 'fastify';

type SerializerFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']
>;
type Serialize = (data: unknown) => string;

/**
 * Response serializers, compiled when first used and shared by every route whose response schema is
 * the same. Fastify's default compiles one per route and status code while the app starts: ~1,300
 * here (most of them the same error body), about half of the start time (docs/performance.md#start).
 * The response schema stays the allow-list of what may leave: each serializer is still fast-json-
 * stringify compiled from that schema, only later and once.
 */
export function lazySharedSerializers(): SerializerFactory & { compileAll(): void } {
  const pending = new Set<() => Serialize>();
  const factory = (
    externalSchemas: Record<string, unknown>,
    serverOptions: SerializerOptions | undefined,
  ) => {
    const options: SerializerOptions = { ...serverOptions, schema: externalSchemas as never };
    const compiled = new Map<string, Serialize>();
    return ({ schema }: { schema: { $id?: string } }) => {
      let serialize: Serialize | undefined;
      const compile = (): Serialize => {
        if (!serialize) {
          pending.delete(compile);
          // Keyed by the schema's text, computed here so that a start pays for none of them.
          const key = JSON.stringify(schema);
          serialize = compiled.get(key);
          if (!serialize) {
            // A schema with its own $id must not also be an external one under that id (as Fastify's own
            // compiler does).
            const external =
              schema.$id && options.schema && (options.schema as Record<string, unknown>)[schema.$id]
                ? Object.fromEntries(
                    Object.entries(options.schema as Record<string, unknown>).filter(
                      ([id]) => id !== schema.$id,
                    ),
                  )
                : options.schema;
            serialize = fastJsonStringify(schema as never, {
              ...options,
              schema: external as never,
            }) as Serialize;
            compiled.set(key, serialize);
          }
        }
        return serialize;
      };
      pending.add(compile);
      return (data: unknown) => compile()(data);
    };
  };
  return Object.assign(factory as unknown as SerializerFactory, {
    compileAll: () => {
      for (const compile of [...pending]) compile();
    },
  });
}
