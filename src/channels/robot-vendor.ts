import type { RobotBody, RobotVendor } from '../domain/robot-render.js';

/**
 * What differs between robot vendors, behind one shape: how a request is made (signature in the
 * query or in the body) and what a vendor's answer code means. The HTTP part is shared
 * (robot.ts).
 */

/** How a failed post is handled: wait and retry, disable the subscriber, dead letter, retry. */
export type RobotFailureKind = 'rate-limited' | 'gone' | 'refused' | 'retryable';

export type RobotVerdict =
  | { ok: true }
  | {
      ok: false;
      kind: RobotFailureKind;
      /** The vendor's code, when the answer carried one. */
      code?: number;
      /** The vendor's own words (`errmsg` / `msg`), as given; the sender scrubs and clips them. */
      vendorMessage?: string;
      /** For `rate-limited`: how long the robot stays locked. */
      retryAfterMs?: number;
    };

export type RobotFailure = Extract<RobotVerdict, { ok: false }>;

export interface RobotRequest {
  url: URL;
  body: string;
}

export interface RobotVendorAdapter {
  readonly vendor: RobotVendor;
  /** How long the vendor locks a robot that went over its limit. */
  readonly rateLimitLockMs: number;
  /** The request for one attempt; `secret` (when the robot has one) signs it at `at`. */
  request(url: URL, body: RobotBody, secret: string | undefined, at: Date): RobotRequest;
  /** Reads an answer body (parsed JSON). Success is code 0 only. */
  classify(answer: unknown): RobotVerdict;
}

export interface CodeTable {
  rateLimited: readonly number[];
  gone: readonly number[];
  refused: readonly number[];
}

/**
 * The verdict for a vendor's numeric code: 0 is success; a known code has its meaning; an unknown
 * one is retried (a busy or changed backend is likelier than a permanent refusal, and the retry
 * schedule is bounded).
 */
export function verdictForCode(
  code: number,
  vendorMessage: string | undefined,
  table: CodeTable,
  rateLimitLockMs: number,
): RobotVerdict {
  if (code === 0) return { ok: true };
  const said = vendorMessage === undefined ? {} : { vendorMessage };
  if (table.rateLimited.includes(code)) {
    return { ok: false, kind: 'rate-limited', code, retryAfterMs: rateLimitLockMs, ...said };
  }
  if (table.gone.includes(code)) return { ok: false, kind: 'gone', code, ...said };
  if (table.refused.includes(code)) return { ok: false, kind: 'refused', code, ...said };
  return { ok: false, kind: 'retryable', code, ...said };
}

/** `answer[codeField]` when it is a number, and `answer[messageField]` when it is a string. */
export function readCode(
  answer: unknown,
  codeField: string,
  messageField: string,
): { code: number | undefined; message: string | undefined } {
  if (typeof answer !== 'object' || answer === null) return { code: undefined, message: undefined };
  const record = answer as Record<string, unknown>;
  const code = record[codeField];
  const message = record[messageField];
  return {
    code: typeof code === 'number' && Number.isInteger(code) ? code : undefined,
    message: typeof message === 'string' ? message : undefined,
  };
}

/**
 * An HTTP 200 whose body has no code: not a success (docs/messages.md), and retrying would post
 * again to a vendor that may have shown it (WeCom and Feishu have no idempotency key), so the
 * message goes to the dead letters with the reason.
 */
export function codelessVerdict(field: string): RobotVerdict {
  return { ok: false, kind: 'refused', vendorMessage: `answer carried no numeric ${field}` };
}
