import { describe, expect, it } from 'vitest';
import { peerRows, type PeerResult } from '../../bench/peer-alertmanager.js';

/**
 * The peer table of the bench report, from a measured Alertmanager run (the integration test
 * needs the binary, which this machine may not have): our side's figures, the row versions of
 * the webhook path reported and not judged (issue 37).
 */

const measured: PeerResult = {
  name: 'alertmanager',
  version: '0.25.0',
  binary: '/usr/bin/prometheus-alertmanager',
  args: [],
  config: "group_by: ['...']",
  notifications: 83_919,
  webhooks: 83_919,
  alertsReceived: 83_919,
  complete: true,
  seconds: 12.5,
  webhooksPerSecond: 6_714,
  cpuSeconds: { alertmanager: 20, feeder: 4.3 },
  cpuMsPerNotification: 0.29,
  memoryMb: 1_181,
};

describe('the peer table', () => {
  it('sets our CPU, rate and row versions per webhook beside Alertmanager', () => {
    const rows = peerRows(measured, {
      cpuMsPerNotification: 0.438,
      webhooksPerSecond: 4_324,
      rowsPerNotification: 2.1357,
    });
    const cells = (label: string) => rows.find((r) => r.label === label)?.cells;
    expect(cells('webhooks/s')).toEqual(['6,714', '4,324']);
    expect(cells('CPU ms per webhook notification (all processes)')).toEqual(['0.29', '0.44']);
    expect(cells('row versions per webhook notification (every table)')).toEqual(['–', '2.136']);
  });

  it('leaves out what our side did not measure', () => {
    const rows = peerRows(measured, { cpuMsPerNotification: 0.438, webhooksPerSecond: 4_324 });
    expect(rows.map((r) => r.label)).not.toContain(
      'row versions per webhook notification (every table)',
    );
  });
});
