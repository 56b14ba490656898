import { shownLevel, type EventType, type Notification } from './render.js';
import { levelRank, type Level } from './warning.js';

/**
 * Warning chains in a message (docs/messages.md): a warning and the updates and cancellations that
 * supersede it are one chain, and so is its expiry (same warning id). A message that carries
 * several notifications of one chain shows the chain once, in its latest state, saying what
 * changed. Email and chat-robot messages both lay out these chains.
 */

/**
 * What a chain's notifications amount to: still 'new', 'updated', 'cancelled' by the issuer, or
 * 'ended'. A warning that began and ended (cancelled or expired) within the same message is
 * 'ended': for a reader catching up, it came and went, and there is nothing left to act on.
 */
export type ChainChange = 'new' | 'updated' | 'cancelled' | 'ended' | 'resumed';

export interface WarningChain {
  /** The notification that shows the chain's latest state. */
  latest: Notification;
  /** All of the chain's notifications in this message, oldest first. */
  notifications: Notification[];
  change: ChainChange;
  /** The chain began within this message (it carries a 'new'). */
  began: boolean;
  /** The latest state's level (as shown: the colour when the level is unknown). */
  level: Level;
}

/** Still in force: worth acting on, as opposed to cancelled or ended. */
export function chainInForce(chain: WarningChain): boolean {
  return chain.change === 'new' || chain.change === 'updated' || chain.change === 'resumed';
}

/** The event type whose wording says the chain's change (a 'new' + cancel reads as ended). */
export const CHANGE_EVENT: Record<ChainChange, EventType> = {
  new: 'new',
  updated: 'update',
  cancelled: 'cancel',
  ended: 'expired',
  resumed: 'resumed',
};

// Within one instant, a cancellation or expiry is later than the update, which is later than the
// warning itself: the same cycle may detect all three. A warning back in force came after its end.
export const EVENT_ORDER: Readonly<Record<EventType, number>> = {
  new: 0,
  update: 1,
  cancel: 2,
  expired: 2,
  resumed: 3,
};

class DisjointSets {
  private readonly parent = new Map<string, string>();

  find(id: string): string {
    let root = id;
    while (this.parent.has(root) && this.parent.get(root) !== root) root = this.parent.get(root)!;
    this.parent.set(id, root);
    return root;
  }

  union(a: string, b: string): void {
    const rootA = this.find(a);
    const rootB = this.find(b);
    if (rootA !== rootB) this.parent.set(rootB, rootA);
  }
}

function changeOf(latest: Notification, began: boolean): ChainChange {
  switch (latest.eventType) {
    case 'new':
      return 'new';
    case 'update':
      return 'updated';
    case 'cancel':
      return began ? 'ended' : 'cancelled';
    case 'expired':
      return 'ended';
    case 'resumed':
      return 'resumed';
  }
}

/**
 * The notifications grouped into chains, each in its latest state, highest level first; among
 * equal levels a chain still in force comes before one that is over, then the earlier first.
 */
export function collapseChains(notifications: readonly Notification[]): WarningChain[] {
  const sets = new DisjointSets();
  for (const n of notifications) {
    sets.find(n.warning.id);
    for (const earlier of [...n.supersedes, ...n.warning.related])
      sets.union(n.warning.id, earlier);
  }
  const indexed = notifications.map((n, index) => ({ n, index }));
  indexed.sort(
    (a, b) =>
      a.n.occurredAt.getTime() - b.n.occurredAt.getTime() ||
      EVENT_ORDER[a.n.eventType] - EVENT_ORDER[b.n.eventType] ||
      a.index - b.index,
  );
  const byRoot = new Map<string, Notification[]>();
  for (const { n } of indexed) {
    const root = sets.find(n.warning.id);
    const chain = byRoot.get(root);
    if (chain) chain.push(n);
    else byRoot.set(root, [n]);
  }
  const chains = [...byRoot.values()].map((chained): WarningChain => {
    const latest = chained[chained.length - 1]!;
    const began = chained.some((n) => n.eventType === 'new');
    return {
      latest,
      notifications: chained,
      change: changeOf(latest, began),
      began,
      level: shownLevel(latest.warning),
    };
  });
  // Map iteration keeps first-seen order, which is chronological: a stable tie-breaker.
  return chains
    .map((chain, order) => ({ chain, order }))
    .sort(
      (a, b) =>
        levelRank(b.chain.level) - levelRank(a.chain.level) ||
        Number(chainInForce(b.chain)) - Number(chainInForce(a.chain)) ||
        a.order - b.order,
    )
    .map(({ chain }) => chain);
}
