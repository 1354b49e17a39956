import { defineConfig } from 'vite';

// The build writes where scripts/build says (--outDir); the API serves it at `/`. Nothing is loaded from
// elsewhere: no fonts, CDNs or analytics, and no inline script (the API's Content-Security-Policy is 'self').
// React's JSX is compiled by Vite's own transformer (automatic runtime); no plugin is needed for a build.
export default defineConfig({
  base: '/',
  build: { sourcemap: false, modulePreload: { polyfill: false } },
  // `npx vite apps/console` against an API started with `npm run up`.
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
});
