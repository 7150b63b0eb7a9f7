import { Type, type Static, type TSchema, type TStringOptions } from 'typebox';
import { ERROR_CODES, type ErrorCode } from './errors.ts';
import { MAX_PAGE } from './pagination.ts';

export const Uuid = Type.String({ format: 'uuid' });

/**
 * The one maximum of every money amount, in integer cents (docs/invoices.md#money): prices, line
 * totals, every invoice amount, payments, refunds, credit notes, approval limits. 10¹⁵: a few such
 * amounts added stay exact in a JavaScript number (below 2⁵³ ≈ 9·10¹⁵) and far inside the bigint
 * columns that hold them (≈ 9.2·10¹⁸).
 */
export const MAX_AMOUNT_CENTS = 1_000_000_000_000_000;
/** An amount in cents from `minimum` (0 or 1) to MAX_AMOUNT_CENTS. */
export const amountCents = (minimum: 0 | 1, options: { description?: string } = {}) =>
  Type.Integer({ ...options, minimum, maximum: MAX_AMOUNT_CENTS });
export const DateTime = Type.String({ format: 'date-time' });
/**
 * A date (YYYY-MM-DD) or a date-time with its time zone. Each branch names its type: a branch with
 * only a `format` is `unknown` to type generators (openapi-typescript), which made every such field
 * `unknown` in generated clients.
 */
export const dateOrDateTime = (options: TStringOptions = {}) =>
  Type.String({
    ...options,
    anyOf: [
      { type: 'string', format: 'date' },
      { type: 'string', format: 'date-time' },
    ],
  });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/**
 * A response string that is one of a closed list, as a string with an `enum` (not a union of
 * literals): generated clients type it as the union, and the serializer writes a plain string.
 */
export const stringEnum = <T extends readonly string[]>(values: T, options: { description?: string } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
/** One of a closed list of strings (an enum written as literals, as OpenAPI shows them). */
export const literals = <T extends readonly string[]>(values: T) =>
  Type.Union(values.map((v) => Type.Literal(v)));

export const FieldErrorSchema = Type.Object({ field: Type.String(), message: Type.String() });

/** The one error body of every status ≥ 400 (CONTRACT §2). Registered as the `ErrorBody` component. */
export const ErrorBody = Type.Object(
  {
    status: Type.Literal('error'),
    status_code: Type.Integer(),
    message: Type.String(),
    // A string with an `enum` (not a union of literals): generated clients get the union of codes, and the
    // serializer writes it as a plain string instead of matching branches.
    code: Type.Unsafe<ErrorCode>({
      type: 'string',
      enum: Object.keys(ERROR_CODES),
      description: 'snake_case error code; see docs/errors.md',
    }),
    request_id: Type.String({
      description: 'the X-Request-Id of the request; quote it when reporting a problem',
    }),
    errors: Type.Optional(Type.Array(FieldErrorSchema)),
    details: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            'facts about the refusal, for programs (e.g. `invalid_transition`: `status`, `requested_status`, `allowed_statuses`)',
        },
      ),
    ),
  },
  { $id: 'ErrorBody', title: 'ErrorBody' },
);
export type ErrorBodyT = Static<typeof ErrorBody>;

export const ErrorRef = Type.Ref('ErrorBody');

/** Error responses every authenticated route may give; merged into each route's `response`. */
export const errorResponses = {
  400: ErrorRef,
  401: ErrorRef,
  403: ErrorRef,
  404: ErrorRef,
  409: ErrorRef,
  413: ErrorRef,
  415: ErrorRef,
  422: ErrorRef,
  429: ErrorRef,
  500: ErrorRef,
  502: ErrorRef,
  503: ErrorRef,
  504: ErrorRef,
};

/** The success envelope of interface §2.1. */
export const Envelope = <T extends TSchema>(data: T) =>
  Type.Object({
    status: Type.Literal('success'),
    status_code: Type.Integer(),
    message: Type.String(),
    data,
  });

export const PageMeta = Type.Object({
  page: Type.Integer(),
  per_page: Type.Integer(),
  total_pages: Type.Integer(),
  total_items: Type.Integer(),
});

export const PageLinks = Type.Object({
  self: Type.String(),
  next: Nullable(Type.String()),
  prev: Nullable(Type.String()),
});

export const pageQuery = (defaultPerPage: number, maxPerPage = 100) => ({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: maxPerPage, default: defaultPerPage })),
});

/** ISO 4217-style code: exactly three letters (stored upper-case). */
export const Currency = Type.String({ minLength: 3, maxLength: 3, pattern: '^[A-Za-z]{3}$' });
