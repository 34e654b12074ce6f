/** esbuild bundles the stylesheets web/main.tsx imports (scripts/buildWeb.ts). */
declare module '*.css';
