import type { FastifyInstance } from 'fastify';
import type { ErrorObject } from 'ajv';
import { AppError } from './errors.ts';
import { findTooDeepJson, TOO_DEEP_MESSAGE } from './text-safety.ts';
import { describeValidation } from './validation.ts';

/**
 * The JSON body parser of every route: Fastify's own (secure-json-parse, `__proto__` and `constructor`
 * refused), after the text is read for nesting. JSON nested deeper than MAX_JSON_DEPTH is refused with
 * 422 `validation_failed` naming where, before it is parsed: the parser takes any depth that fits the
 * body limit, and millions of levels cost seconds and hundreds of MB to parse
 * (docs/errors.md#input-rules-every-route-shares).
 */
export function registerJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const tooDeep = findTooDeepJson(body as string);
    if (tooDeep === undefined) {
      void parseJson(request, body as string, done);
      return;
    }
    const issue = { instancePath: tooDeep, keyword: 'depth', params: {}, message: TOO_DEEP_MESSAGE };
    const [{ field, message }] = describeValidation([issue as unknown as ErrorObject], 'body') as [
      { field: string; message: string },
    ];
    done(
      new AppError('validation_failed', `Invalid request body: ${field} ${message}`, [{ field, message }]),
    );
  });
}
