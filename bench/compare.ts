import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { median } from './median.js';
import { REPO_ROOT } from './procs.js';
import type { BenchReport } from './report.js';

/**
 * `npm run bench -- --compare <ref>`: this checkout's bench and the one of commit `ref`, in turns
 * on this machine (ref first, then ours, `rounds` times), each a whole run of its own, and one
 * table of their figures side by side. Timings on a shared machine drift within minutes; turns
 * put both commits in the same windows, and the medians say which way a change went.
 */

/** The figures compared, per notification of a scenario. */
interface Figures {
  cpuMs: number;
  workersMs: number;
  postgresMs: number;
  redisMs: number;
  rows: number;
  ledgerRows: number;
  walBytes: number;
  wallSeconds: number;
  correct: boolean;
}

const SCENARIOS = ['storm', 'escalation', 'all clear', 'warm storm'] as const;

function figuresOf(report: BenchReport): Map<string, Figures> {
  const out = new Map<string, Figures>();
  for (const s of report.scenarios) {
    const sent = s.channels.webhook.sent + s.channels.email.sent;
    if (sent === 0) continue;
    const c = s.cpuSeconds;
    const workers = c.workers.reduce((a, b) => a + b, 0);
    const perMs = (seconds: number) => (seconds / sent) * 1000;
    out.set(s.name, {
      cpuMs: perMs(workers + c.runner + c.postgres + c.redis),
      workersMs: perMs(workers),
      postgresMs: perMs(c.postgres),
      redisMs: perMs(c.redis),
      rows: s.perNotification?.rows ?? 0,
      ledgerRows: s.perNotification?.ledgerRows ?? 0,
      walBytes: s.perNotification?.walBytes ?? 0,
      wallSeconds: s.wallSeconds,
      correct: s.correctness.ok,
    });
  }
  return out;
}

/** One bench run in `tree`, its report read back. */
function benchIn(tree: string, args: readonly string[], out: string): Promise<BenchReport> {
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'bench/run.ts', ...args, '--no-md', '--out', out],
      { cwd: tree, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    child.once('error', fail);
    child.once('close', (code) => {
      if (code !== 0) fail(new Error(`the bench in ${tree} exited with ${code}`));
      else done(JSON.parse(readFileSync(out, 'utf8')) as BenchReport);
    });
  });
}

/** Runs both benches `rounds` times in turns and prints the table; the worktree goes after. */
export async function compareWith(
  ref: string,
  rounds: number,
  args: readonly string[],
): Promise<string> {
  const sha = execFileSync('git', ['rev-parse', '--short', ref], { cwd: REPO_ROOT })
    .toString()
    .trim();
  const scratch = mkdtempSync(join(os.tmpdir(), 'qwn-compare-'));
  const tree = join(scratch, sha);
  execFileSync('git', ['worktree', 'add', '--detach', tree, sha], { cwd: REPO_ROOT });
  try {
    // This checkout's packages: `npm ci` per commit would cost minutes and measure nothing.
    if (!existsSync(join(tree, 'node_modules'))) {
      symlinkSync(join(REPO_ROOT, 'node_modules'), join(tree, 'node_modules'), 'dir');
    }
    const theirs: Map<string, Figures>[] = [];
    const ours: Map<string, Figures>[] = [];
    for (let round = 1; round <= rounds; round += 1) {
      console.error(`bench --compare: round ${round} of ${rounds}, ${sha}`);
      theirs.push(figuresOf(await benchIn(tree, args, join(scratch, `${sha}-${round}.json`))));
      console.error(`bench --compare: round ${round} of ${rounds}, this checkout`);
      ours.push(figuresOf(await benchIn(REPO_ROOT, args, join(scratch, `ours-${round}.json`))));
    }
    return formatComparison(sha, theirs, ours);
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', tree], { cwd: REPO_ROOT });
    if (existsSync(scratch)) rmSync(scratch, { recursive: true, force: true });
  }
}

const ROWS: readonly [string, keyof Figures, number][] = [
  ['CPU per notification, all processes (ms)', 'cpuMs', 3],
  ['  of it the workers (ms)', 'workersMs', 3],
  ['  of it Postgres (ms)', 'postgresMs', 3],
  ['  of it Redis (ms)', 'redisMs', 3],
  ['row versions per notification', 'rows', 2],
  ['  of them in the ledger', 'ledgerRows', 2],
  ['WAL bytes per notification', 'walBytes', 0],
  ['wall (s)', 'wallSeconds', 1],
];

function formatComparison(
  sha: string,
  theirs: readonly Map<string, Figures>[],
  ours: readonly Map<string, Figures>[],
): string {
  const lines = [
    `medians of ${ours.length} run(s) each, in turns; each cell: ${sha} → this checkout (ratio)`,
  ];
  for (const scenario of SCENARIOS) {
    lines.push('', scenario);
    for (const [label, key, digits] of ROWS) {
      const a = median(theirs.map((m) => Number(m.get(scenario)?.[key] ?? 0)));
      const b = median(ours.map((m) => Number(m.get(scenario)?.[key] ?? 0)));
      const ratio = a > 0 ? ` (${(b / a).toFixed(3)} ×)` : '';
      lines.push(`  ${label.padEnd(42)} ${a.toFixed(digits)} → ${b.toFixed(digits)}${ratio}`);
    }
    const correct = [...theirs, ...ours].every((m) => m.get(scenario)?.correct !== false);
    lines.push(`  ${'every run correct (exactly once)'.padEnd(42)} ${correct ? 'yes' : 'NO'}`);
  }
  return lines.join('\n');
}
