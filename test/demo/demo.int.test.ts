import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../support/net.js';
import { parseMail } from '../support/smtp-sink.js';

/**
 * `qwn demo` as a user runs it: a child process in an empty folder, no DATABASE_URL (PGlite),
 * the local Redis or none at all. It must tell the whole story, exit 0 and leave nothing behind.
 */

const QWN = resolve('bin/qwn.js');

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function baseEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...overrides };
  for (const name of ['DATABASE_URL', 'LOG_LEVEL', 'QUEUE_PREFIX']) {
    if (!(name in overrides)) delete env[name];
  }
  return env;
}

function runDemo(
  cwd: string,
  env: NodeJS.ProcessEnv,
  options: { onStdout?: (text: string, child: ReturnType<typeof spawn>) => void } = {},
): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [QWN, 'demo'], { cwd, env });
    let stdout = '';
    let stderr = '';
    // Before the test's own timeout, so that a stuck run fails with its output to read. A
    // bound on a hang: the story took over 130 s beside the other files on a starved host.
    const timer = setTimeout(() => child.kill('SIGKILL'), 400_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      options.onStdout?.(stdout, child);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolvePromise(true);
    });
    socket.once('error', () => resolvePromise(false));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function match(text: string, pattern: RegExp): RegExpExecArray {
  const found = pattern.exec(text);
  if (!found) throw new Error(`output does not match ${pattern}:\n${text}`);
  return found;
}

let workDir: string;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'qwn-demo-'));
});
afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

describe('qwn demo', () => {
  it('plays the whole story through both channels on PGlite and the local Redis', async () => {
    const run = await runDemo(workDir, baseEnv({ REDIS_URL: 'redis://127.0.0.1:6379' }));
    const out = run.stdout;
    expect(run.code, `${out}\n${run.stderr}`).toBe(0);

    expect(out).toContain('embedded Postgres (PGlite');
    // One block per step, saying what was listed, checked, detected and delivered.
    for (let step = 1; step <= 5; step += 1) expect(out).toContain(`[${step}/5]`);
    expect(out).toMatch(/listed 5 \(3 nobody watches: not fetched\) · checked 2/);
    expect(out).toMatch(/detected {2}expired {2}杭州/);
    // A message of one notification, in the subscriber's language: the orange update is the
    // first this orange-and-above desk hears of the typhoon, so it comes as new.
    expect(out).toMatch(/email {5}ops@guangdong\.example {2}\[Orange warning\] /);

    // Every kind of event, and deliveries by both channels, all sent.
    const events = match(
      out,
      /new\s+update\s+cancel\s+expired\s+resumed\n\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/,
    );
    expect(events.slice(1).map(Number)).toEqual([5, 7, 4, 1, 0]);
    const email = match(out, /email\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\n/);
    const webhook = match(out, /webhook\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\n/);
    expect(email.slice(1).map(Number)).toEqual([17, 0, 0, 0]);
    expect(webhook.slice(1).map(Number)).toEqual([31, 0, 0, 0]);
    expect(out).toContain('webhooks verified  31 of 31 requests');
    // The WeCom group robot: one post per cycle with news for Guangdong, printed as posted,
    // the robot named by host and fingerprint, never by its key.
    const robot = match(out, /robot\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\n/);
    expect(robot.slice(1).map(Number)).toEqual([14, 0, 0, 0]);
    expect(out.match(/wecom {5}广东值班群 posted:/g)).toHaveLength(5);
    expect(out).toMatch(/│ ### 【红色预警】4 条预警：台风（湛江）等/);
    expect(out).toMatch(/WeCom group robot sink 127\.0\.0\.1:\d+#[0-9a-f]{8} /);
    expect(`${out}${run.stderr}`).not.toMatch(/key=/);
    expect(out).toContain('unwatched places   fetched 0 times');

    // The emails are where it says, as real messages.
    const [, count, dir] = match(out, /emails saved\s+(\d+) \.eml files in (\S+)/);
    expect(dir!.startsWith(join(workDir, '.demo', 'mail'))).toBe(true);
    const files = (await readdir(dir!)).filter((f) => f.endsWith('.eml'));
    expect(files).toHaveLength(Number(count));
    const texts = await Promise.all(files.map((f) => readFile(join(dir!, f), 'utf8')));
    // Email subscribers group by cycle (docs/messages.md): one email per step that had anything for
    // them. The 杭州 desk's three notifications came one per step; the Guangdong desk's five in
    // steps 3, 4 and 5 (two each in the last two).
    expect(texts.filter((t) => /^To: duty-desk@hangzhou\.example$/m.test(t))).toHaveLength(3);
    expect(texts.filter((t) => /^To: ops@guangdong\.example$/m.test(t))).toHaveLength(3);
    // The night shift's quiet hours: the red typhoon warning at 湛江 went at once with its
    // chain, and so did its cancel; 珠海's chain waited for the window's end and came as one
    // "while you were away" email, sent by the cycle after the story moved its clock there.
    const night = texts.filter((t) => /^To: night-shift@zhanjiang\.example$/m.test(t));
    expect(night).toHaveLength(3);
    const nightTexts = await Promise.all(
      night.map(async (t) => (await parseMail(Buffer.from(t))).text ?? ''),
    );
    expect(nightTexts.filter((t) => t.startsWith('While you were away'))).toHaveLength(1);
    expect(out).toMatch(
      /\[after\] the night shift's quiet hours end at \d\d:\d\d:\d\d \(Asia\/Shanghai\): \d+ notifications? held; the demo's clock moves there\n {6}released \d+ held messages?\n {6}email {5}night-shift@zhanjiang\.example/,
    );
    expect(out).toMatch(/email {5}night-shift@zhanjiang\.example {2}Updated: \[Red warning\] /);
    expect(files).toHaveLength(9);
    expect(texts.every((t) => /^Message-ID: <.+>$/m.test(t))).toBe(true);

    // Quiet logs: stderr carries no pipeline log lines.
    expect(run.stderr).not.toContain('"level"');

    // Nothing left behind: the servers it printed are closed, its queue keys are gone.
    const ports = [
      match(out, /QWeather simulator on http:\/\/127\.0\.0\.1:(\d+)/)[1],
      match(out, /SMTP sink on 127\.0\.0\.1:(\d+)/)[1],
      match(out, /signature-verifying sink on http:\/\/127\.0\.0\.1:(\d+)/)[1],
      match(out, /WeCom group robot sink 127\.0\.0\.1:(\d+)#/)[1],
    ].map(Number);
    for (const port of ports) expect(await portAnswers(port)).toBe(false);
    const [, prefix] = match(out, /queue prefix (qwn-demo-[0-9a-f]+)/);
    const redis = new Redis('redis://127.0.0.1:6379');
    try {
      expect(await redis.keys(`${prefix}:*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  }, 420_000);

  it('says in one line how to get Redis when none answers and none can be started', async () => {
    const port = await closedPort();
    const run = await runDemo(
      workDir,
      // No redis-server on this PATH; node itself is started by its full path.
      baseEnv({ REDIS_URL: `redis://127.0.0.1:${port}`, PATH: join(workDir, 'no-such-bin') }),
    );
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^qwn demo: no Redis answers at redis://127\\.0\\.0\\.1:${port} and no redis-server program on PATH; start one with \`docker compose up -d redis\`, or install it \\(Debian/Ubuntu: \`sudo apt-get install redis-server\`\\)`,
      ),
    );
  }, 60_000);

  /**
   * A demo that must start its own redis-server (none answers at REDIS_URL), sent `signal` once
   * its output matches `when`; its exit, and whether the server it started is gone.
   */
  async function stoppedBy(signal: NodeJS.Signals, when: RegExp) {
    const port = await closedPort();
    let sent = false;
    const run = await runDemo(workDir, baseEnv({ REDIS_URL: `redis://127.0.0.1:${port}` }), {
      onStdout(text, child) {
        if (!sent && when.test(text)) {
          sent = true;
          child.kill(signal);
        }
      },
    });
    const [, redisPort, pid] = match(
      run.stdout,
      /redis-server started for the demo on 127\.0\.0\.1:(\d+) \(pid (\d+);/,
    );
    return {
      run,
      serverAlive: alive(Number(pid)),
      serverAnswers: await portAnswers(Number(redisPort)),
    };
  }

  it('starts a redis-server when none answers, and stops it when interrupted mid-story', async () => {
    const { run, serverAlive, serverAnswers } = await stoppedBy('SIGINT', /delivered email/);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(130);
    expect(run.stderr).toContain('interrupted, stopping everything it started');
    expect(run.stdout).not.toContain('[5/5]');
    expect(serverAlive).toBe(false);
    expect(serverAnswers).toBe(false);
  }, 420_000);

  it('stops the redis-server it started when its terminal closes (SIGHUP)', async () => {
    const { run, serverAlive, serverAnswers } = await stoppedBy(
      'SIGHUP',
      /redis-server started for the demo/,
    );
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(129);
    expect(run.stderr).toContain('interrupted, stopping everything it started');
    expect(serverAlive).toBe(false);
    expect(serverAnswers).toBe(false);
  }, 420_000);
});
