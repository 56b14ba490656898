import { describe, expect, it } from 'vitest';
import { applyMigrations, useSqlClient } from '../support/db.js';

/**
 * Migration 0018 lets a cycle message collect without a row: a check adds to it while its
 * cycle's `released_at` is null. A cycle that ended before the migration released its messages
 * as the code it ran under did, so it must not read as collecting, or the sweeper would release
 * it again and checks of a retried job would join it; one still running is released as usual.
 */
describe('migration 0018 (cycles release what they collected)', () => {
  const db = useSqlClient({ migratedTo: 18 });

  it('marks every ended cycle released and leaves a running one collecting', async () => {
    const client = db.client;
    const cycles = await client.query<{ id: string; status: string }>(
      `INSERT INTO poll_cycles (status, started_at, finished_at) VALUES
         ('done', now() - interval '2 hours', now() - interval '119 minutes'),
         ('failed', now() - interval '1 hour', NULL),
         ('running', now(), NULL)
       RETURNING id, status`,
    );

    await applyMigrations(client, { from: 18, to: 19 });

    const after = await client.query<{ status: string; released: string | null }>(
      `SELECT status, (CASE WHEN released_at IS NULL THEN NULL
                            WHEN released_at = finished_at THEN 'at its end'
                            WHEN released_at = started_at THEN 'at its start' END) AS released
       FROM poll_cycles WHERE id = ANY($1::uuid[]) ORDER BY started_at`,
      [cycles.rows.map((r) => r.id)],
    );
    expect(after.rows).toEqual([
      { status: 'done', released: 'at its end' },
      { status: 'failed', released: 'at its start' },
      { status: 'running', released: null },
    ]);
    const collecting = await client.query(`SELECT id FROM poll_cycles WHERE released_at IS NULL`);
    expect(collecting.rowCount).toBe(1);
    const index = await client.query(
      `SELECT 1 FROM pg_indexes WHERE indexname = 'poll_cycles_collecting_idx'`,
    );
    expect(index.rowCount).toBe(1);
  });
});
