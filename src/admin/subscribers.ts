import { sql } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';

/** Subscribers that are sent email: active, not unsubscribed, with an address. */
export async function countEmailSubscribers(db: Db): Promise<number> {
  const [row] = await queryRows<{ n: number }>(
    db,
    sql`SELECT count(*)::int AS n FROM subscribers
        WHERE email IS NOT NULL AND active AND unsubscribed_at IS NULL`,
  );
  return row?.n ?? 0;
}
