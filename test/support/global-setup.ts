import { execFileSync } from 'node:child_process';
import net from 'node:net';

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

export default async function setup(): Promise<void> {
  // The processes tests spawn run the compiled dist/ (as the image does), built from this
  // checkout's sources: bin/qwn.js would otherwise fall back to compiling through tsx each time.
  execFileSync(process.execPath, ['scripts/build.mjs', '--quiet'], { stdio: 'inherit' });
  const missing: string[] = [];
  if (!(await answers(5432))) missing.push('Postgres on 127.0.0.1:5432');
  if (!(await answers(6379))) missing.push('Redis on 127.0.0.1:6379');
  if (missing.length > 0) {
    throw new Error(`integration tests need ${missing.join(' and ')} (.ci/run starts them)`);
  }
}
