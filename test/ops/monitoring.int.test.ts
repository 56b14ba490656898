import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { startWorkerProcess, waitUntil, type WorkerProcess } from './worker-process.js';

/**
 * The operations kit of deploy/ names metrics by hand: a renamed or never-exported metric would
 * leave an alert that can never fire and a panel that stays empty. Every metric a rule or the
 * dashboard names must be one a running worker exports. (promtool checks and unit-tests the
 * rules themselves in .ci/run.)
 */

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** Series Prometheus itself makes for every target; no worker exports them. */
const PROMETHEUS_SERIES = new Set(['up']);

const PROMQL_WORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
]);
const PROMQL_WORDS_BEFORE_PARENS = new Set(['by', 'without', 'on', 'ignoring']);

/**
 * The metric names in a PromQL expression: what is left after strings, label matchers, ranges,
 * grouping clauses, function calls, keywords and numbers are set aside.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const match of bare.matchAll(/[A-Za-z_:][\w:]*/g)) {
    const word = match[0];
    const next = bare.slice(match.index + word.length).trimStart();
    if (next.startsWith('(') && !PROMQL_WORDS_BEFORE_PARENS.has(word)) continue; // a function
    if (PROMQL_WORDS.has(word)) continue;
    // Exponents (1e3) and durations after offset are numbers, not names.
    if (/^\d/.test(bare.slice(match.index - 1, match.index))) continue;
    names.push(word);
  }
  return [...new Set(names)];
}

/** Names a Prometheus text exposition holds series for (histograms as their three series). */
function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    else if (type === 'summary') for (const s of ['', '_sum', '_count']) names.add(name! + s);
    else names.add(name!);
  }
  return names;
}

interface RuleFile {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
}

interface Dashboard {
  panels: { title: string; targets?: { expr: string }[] }[];
}

function ruleExpressions(): { where: string; expr: string }[] {
  const rules = parseYaml(read('deploy/prometheus/qwn-alerts.yml')) as RuleFile;
  return rules.groups.flatMap((g) =>
    g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record}`, expr: r.expr })),
  );
}

function dashboardExpressions(): { where: string; expr: string }[] {
  const dashboard = JSON.parse(read('deploy/grafana/dashboards/qwn.json')) as Dashboard;
  return dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr })),
  );
}

describe('PromQL metric names', () => {
  it('finds the metrics and only the metrics', () => {
    expect(
      metricNames(
        'sum by (outcome) (increase(qwn_upstream_calls_total{outcome=~"auth|x"}[15m])) > 0',
      ),
    ).toEqual(['qwn_upstream_calls_total']);
    expect(
      metricNames('(sum(increase(qwn_cycles_total{status="done"}[15m])) or vector(0)) < 1'),
    ).toEqual(['qwn_cycles_total']);
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le) (rate(qwn_cycle_duration_seconds_bucket[30m])))',
      ),
    ).toEqual(['qwn_cycle_duration_seconds_bucket']);
    expect(metricNames('absent(up{job="qwn"} == 1)')).toEqual(['up']);
    expect(metricNames('a_total / on (x) group_left b_total offset 5m > 1e3')).toEqual([
      'a_total',
      'b_total',
    ]);
  });
});

describe('deploy/: rules and dashboard against a running worker', () => {
  let h: PipelineHarness;
  let worker: WorkerProcess | undefined;
  let exported: Set<string>;

  beforeAll(async () => {
    h = await startPipelineHarness();
    worker = await startWorkerProcess({
      ...h.env,
      HTTP_PORT: '0',
      LOG_LEVEL: 'info',
      POLL_INTERVAL_SECONDS: '1',
    });
    // After a finished cycle every read-on-scrape series has been collected once.
    const text = await waitUntil('a scrape after a finished cycle', async () => {
      const res = await worker!.get('/metrics');
      return res.status === 200 && /^qwn_cycles_total\{status="done"\} [1-9]/m.test(res.text)
        ? res.text
        : null;
    });
    exported = exportedNames(text);
  });
  afterAll(async () => {
    await worker?.stop();
    await h?.close();
  });

  it('exports the series the kit relies on', () => {
    for (const name of [
      'qwn_cycles_total',
      'qwn_upstream_calls_total',
      'qwn_queue_oldest_waiting_seconds',
      'qwn_deliveries_oldest_due_seconds',
      'qwn_messages_held',
      'qwn_subscribers_disabled',
      'qwn_redis_maxmemory_policy',
      'process_resident_memory_bytes',
    ]) {
      expect(exported, name).toContain(name);
    }
  });

  it('every metric a rule or a panel names is exported', () => {
    const expressions = [...ruleExpressions(), ...dashboardExpressions()];
    expect(expressions.length).toBeGreaterThan(15);
    const unknown = expressions.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((name) => !exported.has(name) && !PROMETHEUS_SERIES.has(name))
        .map((name) => `${where}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it('has an alert for each failure the kit promises to page on', () => {
    const alerts = ruleExpressions().map((r) => r.where);
    expect(alerts).toEqual(
      [
        'QwnWorkerDown',
        'QwnNoSuccessfulCycle',
        'QwnUpstreamRefused',
        'QwnNotificationsWaiting',
        'QwnDeadLetters',
        'QwnSubscriberDisabled',
        'QwnRedisMayEvict',
      ].map((a) => `rule ${a}`),
    );
  });
});
