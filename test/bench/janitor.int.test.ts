import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { statFields } from '../../bench/procs.js';
import { dropScratchDatabase } from '../../src/db/scratch.js';
import { ADMIN_URL } from '../support/postgres-server.js';
import { waitUntil } from '../support/wait.js';

/**
 * A bench runner killed outright (kill -9) runs no exit handler: its janitor removes what it
 * left behind (bench/janitor.ts). The runner here is test/bench/fixtures/killed-runner.ts,
 * which leaves a process and a scratch database to its janitor.
 */

interface Left {
  sleeper: number;
  database: string;
}

/** Alive, and not a zombie waiting for a parent that does not reap it. */
function alive(pid: number): boolean {
  const state = statFields(pid)?.[0];
  return state !== undefined && state !== 'Z';
}

async function databaseExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    return rowCount === 1;
  } finally {
    await client.end();
  }
}

describe('the bench janitor', () => {
  const started: { runner: ChildProcess; left?: Left }[] = [];

  afterEach(async () => {
    for (const { runner, left } of started.splice(0)) {
      if (runner.exitCode === null && runner.signalCode === null) runner.kill('SIGKILL');
      if (!left) continue;
      if (alive(left.sleeper)) process.kill(left.sleeper, 'SIGKILL');
      await dropScratchDatabase(ADMIN_URL, left.database);
    }
  });

  async function startRunner(mode: 'keep-janitor' | 'release'): Promise<{
    runner: ChildProcess;
    left: Left;
  }> {
    const runner = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/bench/fixtures/killed-runner.ts', ADMIN_URL, mode],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const entry: { runner: ChildProcess; left?: Left } = { runner };
    started.push(entry);
    const lines = createInterface({ input: runner.stdout });
    const first = await lines[Symbol.asyncIterator]().next();
    if (first.done) throw new Error('the runner said nothing of what it left');
    const left = JSON.parse(first.value) as Left;
    entry.left = left;
    return { runner, left };
  }

  it('kills the processes and drops the databases of a runner killed with SIGKILL', async () => {
    const { runner, left } = await startRunner('keep-janitor');
    expect(alive(left.sleeper)).toBe(true);
    expect(await databaseExists(left.database)).toBe(true);

    runner.kill('SIGKILL');

    await waitUntil(() => !alive(left.sleeper), 'the runner’s process killed', 30_000);
    await waitUntil(
      async () => !(await databaseExists(left.database)),
      'the runner’s database dropped',
      30_000,
    );
  }, 60_000);

  it('touches nothing once the runner released it', async () => {
    const { runner, left } = await startRunner('release');
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.once('exit', resolve));
    // The janitor of a released runner exits at once; give a wrongful clean-up time to show.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(alive(left.sleeper)).toBe(true);
    expect(await databaseExists(left.database)).toBe(true);
  }, 60_000);
});
