import { and, count, desc, eq, ilike, inArray, or, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { containsPattern } from '../../platform/db/text-search.ts';
import { products } from './products.tables.ts';

export type ProductRow = typeof products.$inferSelect;

export async function insertProduct(db: DbOrTx, values: typeof products.$inferInsert): Promise<ProductRow> {
  const [row] = await db.insert(products).values(values).returning();
  return row!;
}

export async function findProduct(db: DbOrTx, organizationUids: string[], uid: string) {
  if (organizationUids.length === 0) return undefined;
  const [row] = await db
    .select()
    .from(products)
    .where(and(inArray(products.organizationUid, organizationUids), eq(products.uid, uid)));
  return row;
}

export async function findProductsBySku(
  db: DbOrTx,
  organizationUid: string,
  skus: string[],
): Promise<ProductRow[]> {
  if (skus.length === 0) return [];
  return db
    .select()
    .from(products)
    .where(and(eq(products.organizationUid, organizationUid), inArray(products.sku, skus)));
}

export async function updateProduct(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<ProductRow>,
) {
  const [row] = await db
    .update(products)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(products.organizationUid, organizationUid), eq(products.uid, uid)))
    .returning();
  return row;
}

export async function listProducts(
  db: DbOrTx,
  organizationUid: string,
  options: {
    q?: string | undefined;
    contextType?: 'PRODUCT' | 'DISCOUNT' | undefined;
    limit: number;
    offset: number;
  },
) {
  const conditions: (SQL | undefined)[] = [eq(products.organizationUid, organizationUid)];
  if (options.contextType) conditions.push(eq(products.contextType, options.contextType));
  if (options.q) {
    const pattern = containsPattern(options.q);
    conditions.push(or(ilike(products.sku, pattern), ilike(products.name, pattern)));
  }
  const where = and(...conditions);
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(products)
      .where(where)
      .orderBy(desc(products.createdAt), desc(products.uid))
      .limit(options.limit)
      .offset(options.offset),
    db.select({ total: count() }).from(products).where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}
