import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import type { PipelineContext } from './context.js';
import { enqueueMessage, type Channel } from './deliver.js';

/**
 * A `"cycle"` message collects what one poll cycle creates for its subscriber and goes when the
 * cycle's checks are done (INTERFACE §6). It was created due 60 s after its first notification,
 * the bound that holds when checks are lost or slow; the cycle's end makes it due at once.
 * Idempotent: a message already due or taken is left alone.
 */
export async function releaseCycleMessages(ctx: PipelineContext, cycleId: string): Promise<number> {
  const released = await queryRows<{ id: string; channel: Channel }>(
    ctx.db,
    sql`UPDATE messages SET next_attempt_at = now(), updated_at = now()
        WHERE status = 'open' AND hold = 'cycle' AND cycle_id = ${cycleId}
          AND next_attempt_at > now()
        RETURNING id, channel`,
  );
  // Replaces each message's delayed job with one due now; the sweeper covers a lost enqueue.
  for (const message of released) await enqueueMessage(ctx.queues, message, 0);
  return released.length;
}
