/**
 * An `AbortSignal` that fires after `ms` unless stood down, for nodemailer, which takes only an
 * `AbortSignal`. `AbortSignal.timeout` cannot be stood down: its timer fires long after the send
 * is done and builds a TimeoutError, stack and all, every time (24–42 µs a send against 4 µs
 * here; docs/benchmarks-history.md, item 20). The POSTs of webhooks and robots have their deadline
 * in `postOnce` (src/channels/outbound.ts), with no signal at all.
 */
export interface Deadline {
  /** Aborted only by the time running out, with a TimeoutError. */
  readonly signal: AbortSignal;
  /** Stands the deadline down; call it once the work is over, whatever its outcome. */
  clear(): void;
}

export function startDeadline(ms: number): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => {
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, ms);
  // A pending deadline alone never keeps the process alive.
  timer.unref();
  return {
    signal: controller.signal,
    clear: () => clearTimeout(timer),
  };
}
