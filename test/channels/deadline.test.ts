import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startDeadline } from '../../src/channels/deadline.js';

describe('startDeadline (an AbortSignal, for nodemailer)', () => {
  it('aborts its signal with a TimeoutError once the time is up', async () => {
    const deadline = startDeadline(20);
    expect(deadline.signal.aborted).toBe(false);
    await sleep(60);
    expect(deadline.signal.aborted).toBe(true);
    expect((deadline.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it('never fires once cleared, so a finished send leaves no timer behind', async () => {
    const deadline = startDeadline(20);
    deadline.clear();
    await sleep(60);
    expect(deadline.signal.aborted).toBe(false);
  });
});
