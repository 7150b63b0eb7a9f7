import path from 'node:path';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

/**
 * The console (docs/console.md), built into web/dist and served by Remit at /app: every URL the build
 * writes starts with /app/. `@remit/client` resolves to the workspace's source, so the console never
 * waits for (or runs a stale copy of) the client package's own build.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/app/',
  plugins: [react()],
  resolve: {
    alias: { '@remit/client': path.resolve(import.meta.dirname, '../packages/client/src/index.ts') },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Maps would be served to every visitor; the code is small and unminified names are not secrets.
    sourcemap: false,
    // Sizes are measured by scripts/build-console.mjs (gzip and brotli, written beside each asset).
    reportCompressedSize: false,
    // No asset inlined as a data: URL into scripts or styles: the CSP allows data: for images only.
    assetsInlineLimit: 0,
  },
  // `npm run dev -w @remit/web`: the page on Vite's server, the API on a Remit started with `npm run
  // dev`. The Host header is kept so the API's same-origin check sees the page's own origin.
  server: { proxy: { '/api': { target: 'http://127.0.0.1:3000', changeOrigin: false } } },
});
