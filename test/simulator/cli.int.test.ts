import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { getJson } from './support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('qwn simulate', () => {
  it('starts, prints its URL, serves, and stops cleanly on SIGTERM', async () => {
    await runSimulate([], async (url) => {
      const res = await getJson<{ location: Array<{ id: string }> }>(
        `${url}/v2/city/lookup?location=${encodeURIComponent('杭州')}`,
      );
      expect(res.body.location[0]!.id).toBe('101210101');
      expect((await getJson(`${url}/v7/warning/list?range=cn`)).status).toBe(200);
    });
  });

  it('--retire-v7 answers the v7 warning paths 403 Deprecated, as QWeather does today', async () => {
    await runSimulate(['--retire-v7'], async (url) => {
      const res = await getJson<{ error: { title: string } }>(`${url}/v7/warning/list?range=cn`);
      expect(res.status).toBe(403);
      expect(res.body.error.title).toBe('Deprecated');
      expect((await getJson(`${url}/weatheralert/v1/current/30.25/120.21`)).status).toBe(200);
    });
  });
});

/** `qwn simulate` as a child process: waits for its URL line, uses it, stops it with SIGTERM. */
async function runSimulate(args: string[], use: (url: string) => Promise<void>): Promise<void> {
  const child = spawn(process.execPath, ['bin/qwn.js', 'simulate', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let stdout = '';
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const first = stdout.split('\n')[0];
        if (stdout.includes('\n') && first) resolve(first);
      });
      child.once('exit', (code) => reject(new Error(`exited early with ${code}: ${stdout}`)));
    });
    const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1];
    expect(url).toBeDefined();
    expect(line).toContain(`QWEATHER_API_URL=${url}`);
    await use(url!);

    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
