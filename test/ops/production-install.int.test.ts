import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { queuePrefixes } from '../support/queue-prefixes.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * What the image holds, installed as its Dockerfile installs it (no Docker engine runs here):
 * the compiled dist/, bin/, migrations/ and `npm ci --omit=dev --omit=optional`, with no TypeScript compiler and
 * none of the demo's parts. QWN_IMAGE_NODE runs it on another Node (.ci/run: the image's Node 24).
 */

const exec = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const NODE = process.env.QWN_IMAGE_NODE ?? process.execPath;

const prefixes = queuePrefixes('qwn-image');
let app: string;
let database: TestDatabase;
let sim: Simulator;

beforeAll(async () => {
  app = mkdtempSync(join(tmpdir(), 'qwn-image-'));
  for (const path of ['package.json', 'package-lock.json', 'bin', 'dist', 'migrations']) {
    cpSync(join(ROOT, path), join(app, path), { recursive: true });
  }
  await exec(
    'npm',
    [
      'ci',
      ...['--omit=dev', '--omit=optional', '--ignore-scripts'],
      ...['--no-audit', '--no-fund', '--prefer-offline'],
    ],
    { cwd: app, timeout: 240_000 },
  );
  database = await createTestDatabase({ migrate: false });
  sim = await startSimulator();
}, 300_000);

afterAll(async () => {
  await sim?.close();
  await database?.drop();
  await prefixes.drop();
  rmSync(app, { recursive: true, force: true });
});

async function qwn(args: string[]) {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TZ: 'UTC',
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    DATABASE_URL: database.url,
    REDIS_URL: 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefixes.next(),
    QWEATHER_API_URL: sim.url,
  };
  return exec(NODE, ['bin/qwn.js', ...args], { cwd: app, env, timeout: 60_000 }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}

describe('the production install', () => {
  it('holds neither the compiler nor the demo parts', () => {
    for (const name of ['tsx', 'esbuild', '@electric-sql/pglite', 'smtp-server', 'typescript']) {
      expect(existsSync(join(app, 'node_modules', name)), name).toBe(false);
    }
    expect(existsSync(join(app, 'node_modules', 'bullmq'))).toBe(true);
  });

  it('runs qwn --version, qwn migrate and one qwn poll --once from dist/', async () => {
    const version = await qwn(['--version']);
    expect(version.stdout).toMatch(/^qwn \d+\.\d+\.\d+ \(Node \d+\.\d+\.\d+\)\n$/);
    const migrated = await qwn(['migrate']);
    expect(migrated.stdout.trim()).toBe('migrations applied');
    const poll = await qwn(['poll', '--once']);
    expect(poll.stderr).toBe('');
    expect(poll.code).toBe(0);
    const summary = JSON.parse(poll.stdout.trim().split('\n').at(-1)!) as {
      upstreamErrors: number;
      upstreamCalls: number;
    };
    expect(summary.upstreamErrors).toBe(0);
    expect(summary.upstreamCalls).toBeGreaterThan(0);
  });

  it('says what `qwn demo` needs instead of a stack trace', async () => {
    const demo = await qwn(['demo']);
    expect(demo.code).toBe(1);
    expect(demo.stderr.trim()).toMatch(
      /^qwn demo: needs [@\w/-]+, a development dependency that this install left out \(npm ci --omit=dev, the image\): run it from a full install \(npm install\)$/,
    );
  });
});
