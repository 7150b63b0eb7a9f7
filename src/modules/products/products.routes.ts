import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  CreateProductBody,
  ListProductsQuery,
  PatchProductBody,
  Product,
  ProductEnvelope,
  ProductListEnvelope,
  UidParams,
} from './products.schemas.ts';
import * as service from './products.service.ts';

export async function productRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(Product);
  const tags = ['Products'];

  app.post(
    '/api/products',
    {
      schema: {
        operationId: 'createProduct',
        tags,
        summary: 'Add a SKU to the catalog (duplicate SKU → 409)',
        body: CreateProductBody,
        response: { 201: ProductEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:write', errors: ['already_exists'] },
    },
    async (request, reply) => {
      const product = await service.createProduct(
        db,
        request.tenant(request.body.organization_uid),
        request.body,
      );
      return reply.code(201).send(envelope(product, 'Product created', 201));
    },
  );

  app.get(
    '/api/products/:uid',
    {
      schema: {
        operationId: 'getProduct',
        tags,
        summary: 'Get a product',
        params: UidParams,
        response: { 200: ProductEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:read', errors: ['not_found'] },
    },
    async (request) =>
      envelope(await service.getProduct(db, request.tenant(), request.params.uid), 'Product'),
  );

  app.patch(
    '/api/products/:uid',
    {
      schema: {
        operationId: 'updateProduct',
        tags,
        summary: 'Update a product (only the sent fields change)',
        params: UidParams,
        body: PatchProductBody,
        response: { 200: ProductEnvelope, ...errorResponses },
      },
      config: {
        scope: 'invoices:write',
        errors: ['not_found', 'already_exists'],
        exists: (ctx, { uid }) => service.getProduct(db, ctx, uid!),
      },
    },
    async (request) =>
      envelope(
        await service.patchProduct(db, request.tenant(), request.params.uid, request.body),
        'Product updated',
      ),
  );

  app.get(
    '/api/products',
    {
      schema: {
        operationId: 'listProducts',
        tags,
        summary: 'List the catalog; q matches SKU or name',
        querystring: ListProductsQuery,
        response: { 200: ProductListEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listProducts(
        db,
        ctx,
        { q: request.query.q, contextType: request.query.context_type },
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Products');
    },
  );
}
