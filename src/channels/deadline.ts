import { EventEmitter } from 'node:events';

/**
 * A signal that fires after `ms` unless stood down. `AbortSignal.timeout` cannot be stood down:
 * its timer fires long after the send is done and builds a TimeoutError, stack and all, every
 * time (24–42 µs a send against 4 µs here; BENCHMARKS.md, item 20).
 */
export interface Deadline<Signal> {
  readonly signal: Signal;
  /** True once the time ran out (the signal fired on its own). */
  readonly expired: boolean;
  /** Stands the deadline down; call it once the work is over, whatever its outcome. */
  clear(): void;
}

const timeoutReason = () =>
  new DOMException('The operation was aborted due to timeout', 'TimeoutError');

function startTimer<Signal>(ms: number, signal: Signal, abort: () => void): Deadline<Signal> {
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    abort();
  }, ms);
  // A pending deadline alone never keeps the process alive.
  timer.unref();
  return {
    signal,
    get expired() {
      return expired;
    },
    clear: () => clearTimeout(timer),
  };
}

/** For nodemailer, which takes only an `AbortSignal`. */
export function startDeadline(ms: number): Deadline<AbortSignal> {
  const controller = new AbortController();
  return startTimer(ms, controller.signal, () => controller.abort(timeoutReason()));
}

/**
 * The abort signal undici also takes: an EventEmitter with `aborted` and `reason`, which it
 * listens to with `once` and stops listening to when the request is over. Making one costs
 * under 1 µs; an `AbortSignal` cost 6.4–6.8 µs to make, once per webhook (BENCHMARKS.md,
 * item 43).
 */
export class RequestSignal extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown): void {
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/** For undici requests (webhooks, chat robots). */
export function startRequestDeadline(ms: number): Deadline<RequestSignal> {
  const signal = new RequestSignal();
  return startTimer(ms, signal, () => signal.abort(timeoutReason()));
}
