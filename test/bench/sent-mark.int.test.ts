import { describe, expect, it } from 'vitest';
import { measureSentMarks } from '../../bench/sent-mark.js';
import { ADMIN_URL } from '../support/postgres-server.js';

/**
 * `npm run bench:sent-mark` compares the ledger's sent mark with a HOT one (issue 38, item 4).
 * Its figures are timings; what it claims of the two tables is checked here, at a small size:
 * every mark of the ledger's `messages` is a new row version with new index entries (its
 * indexes name what the mark changes), every mark of the copy a HOT update; the due rows a HOT
 * mark would need are written and deleted.
 */
describe('the sent-mark bench', () => {
  it("marks every message once in each table: the ledger's never HOT, the copy's always", async () => {
    const results = await measureSentMarks({ pgUrl: ADMIN_URL, rows: 300, batch: 100, runs: 1 });
    expect(results.map((r) => [r.table, r.updates, r.hotUpdates])).toEqual([
      ['messages', 300, 0],
      ['messages_hot', 300, 300],
      ['messages_due', 0, 0],
    ]);
    for (const r of results) {
      expect(r.cpuMsPerRow).toBeGreaterThanOrEqual(0);
      expect(r.walBytesPerRow).toBeGreaterThan(0);
    }
  }, 60_000);
});
