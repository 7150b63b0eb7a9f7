import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';

/**
 * The text of src/schema.ts for an OpenAPI document: what the openapi-typescript command line writes with
 * its default options. One function for the generator (scripts/client-schema.ts at the repository root)
 * and the staleness test, so both make the same bytes.
 */
export async function schemaSource(document: object): Promise<string> {
  // `silent`: the document's lint warnings are Redocly's business (npm run lint:openapi), not the types'.
  const ast = await openapiTS(document as Parameters<typeof openapiTS>[0], { silent: true });
  return `${COMMENT_HEADER}${astToString(ast)}`;
}
