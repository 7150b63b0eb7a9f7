-- Extensions every later migration may rely on, on PostgreSQL and on PGlite alike. (pgcrypto was
-- installed here too; nothing uses it, and databases that have it keep it.)
CREATE EXTENSION IF NOT EXISTS pg_trgm;
