import { describe, expect, it } from 'vitest';
import { peerRows, type PeerResult } from '../../bench/peer-alertmanager.js';

/**
 * The peer table of the bench report, from measured Alertmanager runs (the integration test
 * needs the binary, which this machine may not have): medians of the runs in turns with each
 * run's figure beside them, Alertmanager once more with earlier alerts active, and
 * the row versions of the webhook path reported and not judged (issue 37).
 */

const run = (cpuMsPerNotification: number, webhooksPerSecond: number): PeerResult => ({
  name: 'alertmanager',
  version: '0.25.0',
  binary: '/usr/bin/prometheus-alertmanager',
  args: [],
  config: "group_by: ['...']",
  notifications: 83_919,
  activeBefore: 0,
  webhooks: 83_919,
  alertsReceived: 83_919,
  complete: true,
  seconds: 12.5,
  webhooksPerSecond,
  cpuSeconds: { alertmanager: 20, feeder: 4.3 },
  cpuMsPerNotification,
  memoryMb: 1_181,
});

const loaded: PeerResult = { ...run(0.41, 5_000), activeBefore: 83_919, memoryMb: 2_700 };

describe('the peer table', () => {
  it('sets the medians of the runs in turns side by side, each run after them', () => {
    const rows = peerRows([run(0.29, 6_714), run(0.31, 6_000), run(0.27, 7_000)], loaded, {
      coldCpuMs: [0.45, 0.438, 0.5],
      warmCpuMs: [0.3, 0.32, 0.31],
      webhooksPerSecond: [4_324, 4_000, 4_500],
      rowsPerNotification: 2.1357,
    });
    const cells = (label: string) => rows.find((r) => r.label === label)?.cells;
    expect(cells('runs, interleaved')).toEqual(['3', '3']);
    expect(cells('webhooks/s')).toEqual([
      '6,714 (6,714 / 6,000 / 7,000)',
      '4,324 (4,324 / 4,000 / 4,500)',
    ]);
    expect(cells('CPU ms per webhook notification (all processes), cold')).toEqual([
      '0.29 (0.29 / 0.31 / 0.27)',
      '0.45 (0.45 / 0.44 / 0.50)',
    ]);
    expect(
      cells('CPU ms per webhook notification, warm (ours: the next storm, same workers)'),
    ).toEqual(['0.29 (0.29 / 0.31 / 0.27)', '0.31 (0.30 / 0.32 / 0.31)']);
    expect(cells('CPU ms per webhook notification, with a storm of alerts still active')).toEqual([
      '0.41',
      '–',
    ]);
    expect(cells('peak RSS (MB): fresh / with the first storm active')).toEqual([
      '1,181 / 2,700',
      '–',
    ]);
    expect(cells('row versions per webhook notification (every table)')).toEqual(['–', '2.136']);
  });

  it('shows one run as its figure, and leaves out what was not measured', () => {
    const rows = peerRows([run(0.29, 6_714)], undefined, {
      coldCpuMs: [0.438],
      warmCpuMs: [0.3],
      webhooksPerSecond: [4_324],
    });
    const cells = (label: string) => rows.find((r) => r.label === label)?.cells;
    expect(cells('CPU ms per webhook notification (all processes), cold')).toEqual([
      '0.29',
      '0.44',
    ]);
    expect(
      cells('CPU ms per webhook notification, warm (ours: the next storm, same workers)'),
    ).toEqual(['0.29', '0.30']);
    expect(cells('CPU ms per webhook notification, with a storm of alerts still active')).toEqual([
      '–',
      '–',
    ]);
    expect(rows.map((r) => r.label)).not.toContain(
      'row versions per webhook notification (every table)',
    );
  });

  it('says so when Alertmanager could not run', () => {
    expect(
      peerRows([{ name: 'alertmanager', skipped: 'no binary' }], undefined, undefined),
    ).toEqual([{ label: 'Alertmanager', cells: ['skipped: no binary', ''] }]);
  });
});
