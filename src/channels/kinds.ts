/**
 * The channels a message can leave by, and what sets each apart: the one place that names them
 * (docs/design.md). How each renders and sends is src/channels/registry.ts; everything else asks
 * these traits instead of comparing a channel's name.
 */

/** How a message leaves: the subscriber's one address decides it. */
export type Channel = 'email' | 'webhook' | 'robot';

export interface ChannelKind {
  readonly name: Channel;
  /** The subscriber's column that holds this channel's address. */
  readonly addressColumn: 'email' | 'webhook_url' | 'robot_url';
  /**
   * Messages per first-attempt job. One job per message cost about 40 Redis commands and two
   * Postgres transactions per notification; a batch shares them. Emails go in smaller batches:
   * a mail pool sends far fewer per second than a webhook client, and a claimed message should
   * not wait long for its turn.
   */
  readonly firstAttemptBatch: number;
  /** The deliver queue that carries its jobs: robot posts ride the webhook queue. */
  readonly queue: 'deliverEmail' | 'deliverWebhook';
  /** How its notifications group when the seed says nothing (docs/messages.md). */
  readonly defaultGroup: 'none' | 'cycle';
  /**
   * Whether its messages always go through the scheduler: a robot's do, whatever its grouping,
   * because while its rate limit holds a message back, what follows must be able to join it.
   */
  readonly alwaysScheduled: boolean;
  /**
   * Whether the job that planned a message's first attempt sends it without a claim. A robot's
   * is claimed: its attempt count tells a post never tried from one that may have reached the
   * group, which decides whether a waiting post may join another.
   */
  readonly ownedFirstAttempt: boolean;
  /**
   * Whether its server can refuse us as a whole (an SMTP login), pausing the channel rather
   * than failing the message (src/channels/channel-pause.ts).
   */
  readonly pausable: boolean;
  /** Whether its sends share the mail pool's connections (`emailSendShare`). */
  readonly pooled: boolean;
  /** The setting without which it cannot send at all (`qwn test-send` names it). */
  readonly requiredSetting: 'SMTP_URL' | null;
  /** Whether a message too long for the receiving end is split before it is sent. */
  readonly splitsOversized: boolean;
}

export const CHANNEL_KINDS: Readonly<Record<Channel, ChannelKind>> = {
  email: {
    name: 'email',
    addressColumn: 'email',
    firstAttemptBatch: 10,
    queue: 'deliverEmail',
    defaultGroup: 'cycle',
    alwaysScheduled: false,
    ownedFirstAttempt: true,
    pausable: true,
    pooled: true,
    requiredSetting: 'SMTP_URL',
    splitsOversized: false,
  },
  webhook: {
    name: 'webhook',
    addressColumn: 'webhook_url',
    firstAttemptBatch: 50,
    queue: 'deliverWebhook',
    defaultGroup: 'none',
    alwaysScheduled: false,
    ownedFirstAttempt: true,
    pausable: false,
    pooled: false,
    requiredSetting: null,
    splitsOversized: false,
  },
  robot: {
    name: 'robot',
    addressColumn: 'robot_url',
    firstAttemptBatch: 10,
    queue: 'deliverWebhook',
    defaultGroup: 'cycle',
    alwaysScheduled: true,
    ownedFirstAttempt: false,
    pausable: false,
    pooled: false,
    requiredSetting: null,
    splitsOversized: true,
  },
};

/** Every channel, in the order their first attempts are enqueued. */
export const CHANNELS: readonly Channel[] = ['webhook', 'robot', 'email'];

/** Every channel, in the order listings and the demo show them. */
export const CHANNELS_SHOWN: readonly Channel[] = ['email', 'webhook', 'robot'];

export const kindOf = (channel: Channel): ChannelKind => CHANNEL_KINDS[channel];

/** The channel of a subscriber: the one of its addresses that is set. */
export function channelOfAddress(
  address: Partial<Record<ChannelKind['addressColumn'], string | null>>,
): Channel {
  return CHANNELS.find((c) => address[CHANNEL_KINDS[c].addressColumn]) ?? 'webhook';
}

/**
 * SQL for the channel of subscriber `alias`: the column of its one address, in the order
 * `channelOfAddress` reads them (the schema allows one address per subscriber).
 */
export function subscriberChannelSql(alias: string): string {
  const cases = CHANNELS.map(
    (c) => `WHEN ${alias}.${CHANNEL_KINDS[c].addressColumn} IS NOT NULL THEN '${c}'`,
  ).join(' ');
  return `CASE ${cases} END`;
}

/** A SQL list of the channels with a trait, quoted: `'email', 'webhook'`. */
export function channelsWhere(trait: (kind: ChannelKind) => boolean): string {
  return CHANNELS.filter((c) => trait(CHANNEL_KINDS[c]))
    .map((c) => `'${c}'`)
    .join(', ');
}
