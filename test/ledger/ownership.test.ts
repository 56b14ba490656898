import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * One owner for the ledger (issue 37, docs/design.md): only src/ledger/ speaks SQL to
 * `deliveries` and `messages`, and everything else comes in through src/ledger/index.ts. The
 * schema declares the tables; the tests and the bench may read them to check outcomes, and the
 * bench's imports are held like the product's. One clock for the ledger and the jobs too: the
 * `now` they are given, never SQL's, so that tests move time instead of waiting for it.
 */

const ROOT = join(import.meta.dirname, '../..');
const LEDGER_TABLES = /\b(FROM|INTO|UPDATE|JOIN|TABLE|TRUNCATE)\s+(deliveries|messages)\b/gi;
const SCHEMA_TABLES =
  /import\s*\{[^}]*\b(deliveries|messages)\b[^}]*\}\s*from\s*'[./]*db\/schema\.js'/;
/**
 * A channel named where code compares or maps it, in JavaScript or SQL: only src/channels/ (its
 * traits, kinds.ts, and its senders) and the schema may.
 */
const CHANNEL_LITERAL = /(?:[!=]==|<>|\bTHEN|\bWHEN|(?<!\?)\?(?!\?))\s*'(?:email|webhook|robot)'/g;

/** SQL's own clock, `now()`, as opposed to a JavaScript `ctx.now()` or `Date.now()`. */
const SQL_CLOCK = /(?<![.\w])now\(\)/g;
const LEDGER_MODULE = /from\s*'((?:\.\.?\/)+(?:src\/)?ledger\/(?!index\.js)[\w-]+\.js)'/g;

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** Every place in `files` outside src/ledger/ that `pattern` finds, as `file: match`. */
export function trespasses(files: Record<string, string>, pattern: RegExp): string[] {
  const found: string[] = [];
  for (const [file, text] of Object.entries(files)) {
    if (file.startsWith('src/ledger/') || file === 'src/db/schema.ts') continue;
    const global = new RegExp(
      pattern.source,
      pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`,
    );
    for (const m of text.matchAll(global)) found.push(`${file}: ${m[0].replace(/\s+/g, ' ')}`);
  }
  return found;
}

const read = (files: string[]) =>
  Object.fromEntries(files.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));
const product = read([...sources('src'), ...sources('scripts')]);
const bench = read(sources('bench'));

describe('the ledger has one owner', () => {
  it('no SQL outside src/ledger/ reads or writes a ledger table', () => {
    expect(trespasses(product, LEDGER_TABLES)).toEqual([]);
    expect(trespasses(product, SCHEMA_TABLES)).toEqual([]);
  });

  it('nothing outside src/ledger/ imports a ledger module but its index', () => {
    expect(trespasses({ ...product, ...bench }, LEDGER_MODULE)).toEqual([]);
  });

  it('the ledger and the jobs read one clock, the one they are given', () => {
    const jobs = Object.entries(product).filter(
      ([file]) => file.startsWith('src/ledger/') || file.startsWith('src/pipeline/'),
    );
    const found = jobs.flatMap(([file, text]) =>
      [...text.matchAll(SQL_CLOCK)].map(() => `${file}: now()`),
    );
    expect(found).toEqual([]);
    expect([...'SET at = now(), b = ctx.now(), c = Date.now()'.matchAll(SQL_CLOCK)]).toHaveLength(
      1,
    );
  });

  it('no code outside src/channels/ tells channels apart by name', () => {
    // The seed's address forms are the seed document's own (INTERFACE.md): TypeScript narrows
    // that union by its `channel` field, so the seed code compares it by name.
    const outsideChannels = (files: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(files).filter(
          ([file]) => !file.startsWith('src/channels/') && !file.startsWith('src/admin/seed'),
        ),
      );
    expect(trespasses(outsideChannels(product), CHANNEL_LITERAL)).toEqual([]);
    const planted = {
      'src/pipeline/x.ts': "if (message.channel === 'email') pause();",
      'src/ops/y.ts': "sql`CASE WHEN email IS NOT NULL THEN 'email' ELSE 'webhook' END`",
      'src/admin/z.ts': "const shown = r.robot_kind ?? 'robot';",
      'src/channels/kinds.ts': "channel === 'robot'",
    };
    expect(trespasses(outsideChannels(planted), CHANNEL_LITERAL)).toEqual([
      "src/pipeline/x.ts: === 'email'",
      "src/ops/y.ts: THEN 'email'",
    ]);
  });

  it('finds what it forbids', () => {
    const planted = {
      'src/ops/x.ts': "await db.execute(sql`UPDATE messages SET status = 'sent'`);",
      'src/admin/y.ts': 'sql`SELECT 1 FROM\n  deliveries d JOIN messages m ON true`',
      'src/demo/z.ts': "import { messages } from '../db/schema.js';",
      'src/cli/w.ts': "import { claimMessages } from '../ledger/take.js';",
      'src/ledger/take.ts': 'sql`UPDATE messages SET attempts = 1`',
    };
    expect(trespasses(planted, LEDGER_TABLES)).toEqual([
      'src/ops/x.ts: UPDATE messages',
      'src/admin/y.ts: FROM deliveries',
      'src/admin/y.ts: JOIN messages',
    ]);
    expect(trespasses(planted, SCHEMA_TABLES)).toHaveLength(1);
    expect(trespasses(planted, LEDGER_MODULE)).toEqual(["src/cli/w.ts: from '../ledger/take.js'"]);
  });
});
