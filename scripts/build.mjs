#!/usr/bin/env node
// `npm run build`: src/**/*.ts → dist/**/*.js, one file for one file, so that paths relative to a
// module (migrations/, package.json) stay the same. esbuild only strips types; `npm run check`
// (tsc) is what type-checks. Written last, dist/.built tells bin/qwn.js the output is complete.
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const dist = join(root, 'dist');

const entryPoints = readdirSync(src, { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
  .map((entry) => relative(root, join(entry.parentPath, entry.name)));

rmSync(dist, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints,
  outdir: 'dist',
  outbase: 'src',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
writeFileSync(join(dist, '.built'), `${new Date().toISOString()}\n`);
if (!process.argv.includes('--quiet')) {
  console.log(`built ${entryPoints.length} modules into dist/`);
}
