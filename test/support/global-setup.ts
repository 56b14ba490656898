import { execFileSync } from 'node:child_process';
import net from 'node:net';
import type { TestProject } from 'vitest/node';
import { openPostgres } from '../../src/db/client.js';
import { createScratchDatabase } from '../../src/db/scratch.js';
import { ADMIN_URL } from './postgres-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's migrated database, which createTestDatabase copies. */
    migratedTemplate: string;
  }
}

/** Integration tests need the local Postgres and Redis; say so plainly when one is missing. */
function answers(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The processes tests spawn run the compiled dist/ (as the image does), built from this
  // checkout's sources: bin/qwn.js would otherwise fall back to compiling through tsx each time.
  execFileSync(process.execPath, ['scripts/build.mjs', '--quiet'], { stdio: 'inherit' });
  const missing: string[] = [];
  if (!(await answers(5432))) missing.push('Postgres on 127.0.0.1:5432');
  if (!(await answers(6379))) missing.push('Redis on 127.0.0.1:6379');
  if (missing.length > 0) {
    throw new Error(`integration tests need ${missing.join(' and ')} (.ci/run starts them)`);
  }
  // Migrated once here, copied by each file: nobody may stay connected to it, or the copies fail.
  const template = await createScratchDatabase(ADMIN_URL, 'qwn_template');
  const database = openPostgres(template.url, { poolSize: 1, applicationName: 'qwn template' });
  try {
    await database.migrate();
  } finally {
    await database.close();
  }
  project.provide('migratedTemplate', template.name);
  return template.drop;
}
