/** A message as the ledger hands it on: its channel, and what a check's statement created. */

import type { Channel } from '../channels/kinds.js';
import type { Outgoing } from './take.js';

export type { Channel };

/** A message a check just created, and the job that will carry its first attempt. */
export interface CreatedMessage {
  id: string;
  channel: Channel;
  /** The batch job of its first attempt, delayed until `dueAt` for a message that collects. */
  firstJobId: string;
  dueAt: Date;
  /** Written claimed by its writer's process, which sends its first attempt (`RecordInput.leased`). */
  leased: boolean;
  /** A leased message as its writer knows it: its first attempt needs no take (`knownFirstAttempt`). */
  known?: Outgoing;
}

/** A cycle whose messages a check added to: released by `dueAt` at the latest (docs/messages.md). */
export interface CycleRelease {
  cycleId: string;
  dueAt: Date;
}
