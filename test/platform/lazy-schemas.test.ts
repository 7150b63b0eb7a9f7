import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';

// Validators and serializers compile on first use (docs/performance.md#start-and-footprint): prove every
// route's schemas compile, and that a late-compiled response schema is still the allow-list.
describe('schemas compiled on first use', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      beforeReady: (app) => {
        const Shape = Type.Object({ kept: Type.String() }, { additionalProperties: false });
        for (const url of ['/test/lazy-a', '/test/lazy-b']) {
          app.get(
            url,
            {
              schema: {
                querystring: Type.Object({ n: Type.Optional(Type.Integer()) }),
                response: { 200: Shape },
              },
              config: { public: true },
            },
            async (request) => ({ kept: `n=${String((request.query as { n?: number }).n)}`, secret: 'leak' }),
          );
        }
      },
    });
  });
  afterAll(async () => t?.close());

  it('every route’s validators and serializers compile', () => {
    expect(() => t.app.compileSchemas()).not.toThrow();
  });

  it('a serializer shared by two routes still drops what its schema does not allow', async () => {
    for (const url of ['/test/lazy-a?n=3', '/test/lazy-b?n=4']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ kept: `n=${url.slice(-1)}` });
    }
  });

  it('a validator compiled on first use refuses bad input with the one error body', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/test/lazy-a?n=1e308' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ status: 'error' });
  });
});
