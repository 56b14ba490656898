import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { startWorkerProcess, type WorkerProcess } from './worker-process.js';

const WARNING = 'heap too small for a national storm: give the worker 1 GiB';

/** The process's own heap is what is tested, so the worker runs as a process of its own. */
describe('qwn worker: a heap too small for a storm', () => {
  let h: PipelineHarness;
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    h = await startPipelineHarness();
  });
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
  });
  afterAll(async () => {
    worker?.kill();
    await h?.close();
  });

  const env = (extra: Record<string, string> = {}) => ({
    ...h.env,
    HTTP_PORT: '0',
    LOG_LEVEL: 'info',
    ...extra,
  });

  it('warns once at start when its heap is capped below what a storm needs', async () => {
    worker = await startWorkerProcess(env({ NODE_OPTIONS: '--max-old-space-size=200' }));
    await worker.waitForLine((l) => l.msg === 'worker started');
    const warnings = worker.lines.filter((l) => l.msg === WARNING);
    expect(warnings).toEqual([expect.objectContaining({ level: 40, advisedHeapMib: 480 })]);
    expect(Number(warnings[0]!.heapLimitMib)).toBeLessThan(480);
  });

  it('says nothing with the heap Node gives it here', async () => {
    worker = await startWorkerProcess(env({ NODE_OPTIONS: '--max-old-space-size=1024' }));
    await worker.waitForLine((l) => l.msg === 'worker started');
    expect(worker.lines.filter((l) => l.msg === WARNING)).toEqual([]);
  });
});
