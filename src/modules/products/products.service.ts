import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { isUniqueViolation } from '../../platform/db/errors.ts';
import { memberOrganizationUids, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import * as repo from './products.repository.ts';
import type { CreateProductBodyT, PatchProductBodyT } from './products.schemas.ts';
import { withTextSearchIndexes } from '../../platform/db/session-role.ts';

export function toProductView(row: repo.ProductRow) {
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    sku: row.sku,
    name: row.name,
    context_type: row.contextType,
    unit_price: row.unitPrice,
    currency: row.currency,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

const duplicateSku = (sku: string) =>
  new AppError('already_exists', `A product with SKU "${sku}" already exists`, [
    { field: 'sku', message: 'already exists in this organization' },
  ]);

export async function createProduct(db: Db, ctx: RequestContext, body: CreateProductBodyT) {
  try {
    const row = await repo.insertProduct(db, {
      organizationUid: ctx.organizationUid,
      sku: body.sku.trim(),
      name: body.name.trim(),
      contextType: body.context_type,
      unitPrice: body.unit_price,
      currency: body.currency.toUpperCase(),
    });
    return toProductView(row);
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateSku(body.sku.trim());
    throw error;
  }
}

export async function getProduct(db: Db, ctx: RequestContext, uid: string) {
  const row = await repo.findProduct(db, memberOrganizationUids(ctx), uid);
  if (!row) throw notFound('Product');
  return toProductView(row);
}

export async function patchProduct(db: Db, ctx: RequestContext, uid: string, body: PatchProductBodyT) {
  const existing = await repo.findProduct(db, memberOrganizationUids(ctx), uid);
  if (!existing) throw notFound('Product');
  try {
    const row = await repo.updateProduct(db, existing.organizationUid, uid, {
      ...(body.sku !== undefined ? { sku: body.sku.trim() } : {}),
      ...(body.name !== undefined ? { name: body.name.trim() } : {}),
      ...(body.context_type !== undefined ? { contextType: body.context_type } : {}),
      ...(body.unit_price !== undefined ? { unitPrice: body.unit_price } : {}),
      ...(body.currency !== undefined ? { currency: body.currency.toUpperCase() } : {}),
    });
    return toProductView(row!);
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateSku(body.sku!.trim());
    throw error;
  }
}

export async function listProducts(
  db: Db,
  ctx: RequestContext,
  filters: { q?: string | undefined; contextType?: 'PRODUCT' | 'DISCOUNT' | undefined },
  page: PageRequest,
) {
  const q = filters.q?.trim() || undefined;
  const { rows, total } = await withTextSearchIndexes(q !== undefined, () =>
    repo.listProducts(db, ctx.organizationUid, {
      q,
      contextType: filters.contextType,
      limit: page.perPage,
      offset: offsetOf(page),
    }),
  );
  return { items: rows.map(toProductView), total };
}

/** The organization's products with these SKUs, for line items that name one. */
export function findProductsBySku(
  db: DbOrTx,
  organizationUid: string,
  skus: string[],
): Promise<repo.ProductRow[]> {
  return repo.findProductsBySku(db, organizationUid, skus);
}
