import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../src/config.js';
import { useSqlClient } from './support/db.js';

const readme = readFileSync('README.md', 'utf8');

function section(title: string): string {
  const start = readme.indexOf(title);
  if (start === -1) throw new Error(`README has no "${title}"`);
  const next = readme.indexOf('\n#', start + title.length);
  return readme.slice(start, next === -1 ? undefined : next);
}

describe('README', () => {
  it('documents every configuration variable the code reads, and no other', () => {
    const table = section('## Configuration');
    const documented = new Set([...table.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
    for (const name of CONFIG_VARIABLES) expect(documented, name).toContain(name);
    const rows = [...table.matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map((m) => m[1]!);
    for (const name of rows) expect(CONFIG_VARIABLES, name).toContain(name);
  });

  it('shows the two commands of a newcomer', () => {
    expect(readme).toContain('npm install && npm run demo');
    expect(readme).toContain('npm test');
  });

  describe('the SQL an admin is shown', () => {
    const sql = useSqlClient();

    it('runs as written and does what it says', async () => {
      const blocks = [...section('### With SQL').matchAll(/```sql\n([\s\S]*?)```/g)].map(
        (m) => m[1]!,
      );
      expect(blocks.length).toBeGreaterThan(0);
      for (const block of blocks) await sql.client.query(block);
      const subscribers = await sql.client.query<{
        email: string | null;
        robot_kind: string | null;
        active: boolean;
      }>('SELECT email, robot_kind, active FROM subscribers ORDER BY email NULLS LAST, robot_kind');
      expect(subscribers.rows).toEqual([
        { email: 'night@example.com', robot_kind: null, active: true },
        { email: null, robot_kind: 'dingtalk', active: true },
        { email: null, robot_kind: null, active: true },
      ]);
      const subscriptions = await sql.client.query<{
        min_level: string | null;
        events: string[] | null;
      }>('SELECT min_level, events FROM subscriptions ORDER BY min_level NULLS LAST');
      expect(subscriptions.rows).toEqual([
        { min_level: '橙色', events: ['new', 'cancel'] },
        { min_level: null, events: null },
        { min_level: null, events: null },
      ]);
    });
  });
});
