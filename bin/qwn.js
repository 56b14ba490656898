#!/usr/bin/env node
// The `qwn` command. It runs the compiled dist/ (`npm run build`; what the image ships). In a
// checkout whose src/ is newer than dist/, or has no dist/, it runs the sources through tsx
// (a development dependency), so `npx qwn` works right after `npm ci` (INTERFACE §1).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = `${root}dist/.built`;
const sources = `${root}src`;

/** dist/ is complete and no source file changed after it was built. */
function distIsCurrent() {
  if (!existsSync(built)) return false;
  if (!existsSync(sources)) return true;
  const builtAt = statSync(built).mtimeMs;
  return readdirSync(sources, { recursive: true, withFileTypes: true }).every(
    (entry) => !entry.isFile() || statSync(`${entry.parentPath}/${entry.name}`).mtimeMs <= builtAt,
  );
}

if (distIsCurrent()) {
  await import('../dist/main.js');
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write(
      'qwn: dist/ is missing or older than src/, and tsx is not installed: run `npm run build`\n',
    );
    process.exit(1);
  }
  register();
  await import('../src/main.ts');
}
