import { defineConfig } from 'drizzle-kit';

// Migrations are generated from the schema and applied by the service itself (src/platform/db/migrate.ts),
// never by the drizzle-kit CLI, so that PGlite and PostgreSQL run exactly the same files.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/schema.ts',
  out: './migrations',
});
