// `npm start`: brings dist/ and web/dist up to date when a source is newer (build-if-stale.mjs), then
// runs the server in this same process. One Node process instead of two (a `prestart` script was a
// second Node start and a second npm lifecycle step: ≈ 0.1 s of every start; docs/performance.md).
import { buildIfStale } from './build-if-stale.mjs';

buildIfStale();
await import('../dist/server.js');
