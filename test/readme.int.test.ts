import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../src/config.js';
import { useSqlClient } from './support/db.js';

const readme = readFileSync('README.md', 'utf8');
const DOCS = [
  'README.md',
  'BENCHMARKS.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

function section(file: string, title: string): string {
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(title);
  if (start === -1) throw new Error(`${file} has no "${title}"`);
  const next = text.indexOf('\n#', start + title.length);
  return text.slice(start, next === -1 ? undefined : next);
}

describe('README and docs', () => {
  it('stand alone: every relative link names a file of the repository, none points outside', () => {
    for (const file of DOCS) {
      const text = readFileSync(file, 'utf8');
      expect(text, file).not.toMatch(/\.\.\/shared|INTERFACE §|DESIGN\.md|STYLE\.md/);
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        expect(existsSync(join(dirname(file), target!)), `${file} → ${target}`).toBe(true);
      }
    }
  });

  it('keeps the README short: what qwn promises and how to run it', () => {
    expect(readme.split('\n').length).toBeLessThan(300);
  });

  it('documents every configuration variable the code reads, and no other', () => {
    const table = section('docs/configuration.md', '# Configuration');
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
      const blocks = [
        ...section('docs/subscribers.md', '## With SQL').matchAll(/```sql\n([\s\S]*?)```/g),
      ].map((m) => m[1]!);
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
