import { dropScratchDatabase } from '../src/db/scratch.js';
import { statFields } from './procs.js';

/**
 * The bench runner's janitor: a child process that outlives a runner killed outright (kill -9,
 * an OOM kill), which runs no exit handler. The runner tells it each process and scratch
 * database it starts; when the runner's IPC channel closes before it said `done`, the janitor
 * kills those processes and drops those databases. Without it, such a run left its own Redis
 * server, its worker processes and a database of a few hundred MB behind.
 */

export type JanitorMessage =
  | { type: 'process'; pid: number }
  | { type: 'database'; serverUrl: string; name: string }
  | { type: 'done' };

/**
 * A process as registered: its start time (in clock ticks since boot) tells it from a later one
 * with the same pid. Its command line would not: Redis rewrites its own.
 */
const processes = new Map<number, string>();
const databases: { serverUrl: string; name: string }[] = [];
let done = false;

/** Field 22 of `/proc/<pid>/stat`. */
function startTime(pid: number): string | null {
  return statFields(pid)?.[19] ?? null;
}

async function cleanUp(): Promise<void> {
  for (const [pid, registered] of processes) {
    if (startTime(pid) !== registered) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
  for (const { serverUrl, name } of databases) {
    // Best effort: the server may be gone too.
    await dropScratchDatabase(serverUrl, name).catch(() => undefined);
  }
}

process.on('message', (m: JanitorMessage) => {
  if (m.type === 'done') done = true;
  else if (m.type === 'process') {
    const started = startTime(m.pid);
    if (started !== null) processes.set(m.pid, started);
  } else databases.push({ serverUrl: m.serverUrl, name: m.name });
});
// A Ctrl-C reaches the whole process group: the runner cleans up after itself then, and the
// janitor must still be here should it not.
process.on('SIGINT', () => undefined);
process.once('disconnect', () => {
  if (done) process.exit(0);
  void cleanUp().finally(() => process.exit(0));
});
process.send?.({ type: 'ready' });
