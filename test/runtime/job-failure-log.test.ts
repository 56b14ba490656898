import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { FAILURE_WINDOW_MS, JobFailureLog } from '../../src/runtime/job-failure-log.js';

interface Line {
  msg: string;
  queue?: string;
  jobId?: string;
  error?: string;
  count?: number;
  err?: { message: string; stack?: string };
}

function capture() {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Line);
      done();
    },
  });
  return { lines, log: new JobFailureLog(createLogger('info', stream)) };
}

const refused = () => new Error('connect ECONNREFUSED 127.0.0.1:5432');

describe('the log of failed jobs', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('writes an outage as one full line and one count, not a line per job', () => {
    const { lines, log } = capture();
    for (let i = 0; i < 200; i += 1) {
      log.failed({ queue: 'deliver-webhook', jobId: `j${i}`, attempt: 1 }, refused());
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'job failed', queue: 'deliver-webhook', jobId: 'j0' });
    expect(lines[0]!.err?.stack).toContain('ECONNREFUSED');

    vi.advanceTimersByTime(FAILURE_WINDOW_MS);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({
      msg: 'job failures repeated',
      queue: 'deliver-webhook',
      error: 'Error: connect ECONNREFUSED 127.0.0.1:5432',
      count: 199,
    });
  });

  it('writes a different error, or the same on another queue, at once', () => {
    const { lines, log } = capture();
    log.failed({ queue: 'check', jobId: 'a', attempt: 1 }, refused());
    log.failed({ queue: 'check', jobId: 'b', attempt: 1 }, new Error('deadlock detected'));
    log.failed({ queue: 'deliver-email', jobId: 'c', attempt: 1 }, refused());
    log.failed({ queue: 'check', jobId: 'd', attempt: 2 }, refused());
    expect(lines.map((l) => `${l.msg} ${l.jobId}`)).toEqual([
      'job failed a',
      'job failed b',
      'job failed c',
    ]);
    vi.advanceTimersByTime(FAILURE_WINDOW_MS);
    // Only the kind that repeated has a count.
    expect(lines.slice(3)).toEqual([
      expect.objectContaining({ msg: 'job failures repeated', queue: 'check', count: 1 }),
    ]);
  });

  it("writes the next window's first failure in full again, and counts on closing", () => {
    const { lines, log } = capture();
    log.failed({ queue: 'check', jobId: 'a', attempt: 1 }, refused());
    vi.advanceTimersByTime(FAILURE_WINDOW_MS);
    log.failed({ queue: 'check', jobId: 'b', attempt: 1 }, refused());
    log.failed({ queue: 'check', jobId: 'c', attempt: 1 }, refused());
    expect(lines.map((l) => `${l.msg} ${l.jobId ?? l.count}`)).toEqual([
      'job failed a',
      'job failed b',
    ]);
    // The workers closing: the count so far is written, not lost with the timer.
    log.flush();
    expect(lines[2]).toMatchObject({ msg: 'job failures repeated', count: 1 });
    vi.advanceTimersByTime(FAILURE_WINDOW_MS * 2);
    expect(lines).toHaveLength(3);
  });
});
