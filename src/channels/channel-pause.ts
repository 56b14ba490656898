/**
 * A channel that refuses us as a whole, not one message: an SMTP server refusing the login (535)
 * refuses every email alike. Each email trying again on its own schedule would burn its attempts
 * into the dead letters and hammer the server with logins (some lock the account). Instead the
 * process pauses the channel: messages wait without counting an attempt, one login is tried per
 * pause, and the pause grows from 30 s to 5 min until the server takes the login again
 * (docs/operations.md). `/healthz` reports it as degraded, `/metrics` as `qwn_channel_paused`.
 */

export interface PauseSnapshot {
  readonly paused: boolean;
  readonly reason: string | null;
  readonly since: Date | null;
  readonly retryAt: Date | null;
}

export const FIRST_PAUSE_MS = 30_000;
export const LONGEST_PAUSE_MS = 300_000;

export class ChannelPause {
  private since: Date | null = null;
  private reason: string | null = null;
  private until = 0;
  private lengthMs = 0;

  constructor(private readonly now: () => Date) {}

  /** How long sends must still wait, 0 when the channel is open (or its pause is over: a probe). */
  remainingMs(): number {
    return Math.max(0, this.until - this.now().getTime());
  }

  /**
   * The server refused the channel: pause it, longer each time in a row. Returns the pause. A
   * refusal while paused (a send that was under way) does not lengthen it.
   */
  refused(reason: string): number {
    const now = this.now();
    this.reason = reason;
    if (this.remainingMs() > 0) return this.remainingMs();
    this.since ??= now;
    this.lengthMs =
      this.lengthMs === 0 ? FIRST_PAUSE_MS : Math.min(this.lengthMs * 2, LONGEST_PAUSE_MS);
    this.until = now.getTime() + this.lengthMs;
    return this.lengthMs;
  }

  /** A send went through: the channel is open again. Returns whether it had been paused. */
  accepted(): boolean {
    const was = this.since !== null;
    this.since = null;
    this.reason = null;
    this.until = 0;
    this.lengthMs = 0;
    return was;
  }

  snapshot(): PauseSnapshot {
    return {
      paused: this.since !== null,
      reason: this.reason,
      since: this.since,
      retryAt: this.since ? new Date(Math.max(this.until, this.now().getTime())) : null,
    };
  }
}
