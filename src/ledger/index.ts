/**
 * The delivery ledger: the only code that reads or writes `deliveries` and `messages`
 * (docs/design.md). Everything outside src/ledger/ comes in through
 * this file; test/ledger/ownership.test.ts holds both rules.
 *
 * - message.ts: a message's channel, and what a check's statement created
 * - ids.ts: the time-ordered ids of notifications and messages
 * - record.ts: a check's notifications and their messages, in the check's transaction
 * - told.ts: what each subscriber was told of a warning's story
 * - dispatch.ts: the deliver jobs that carry a message's attempts
 * - take.ts: a deliver job takes its messages, with their subscribers and notifications
 * - known-first-attempt.ts: a first attempt as its check knows it, sent without a take
 * - sent-mark.ts: sent messages marked in group commits
 * - settle.ts: an attempt that did not send: retrying, dead, waiting, handed back or split
 * - prune.ts: finished notifications and messages past RETENTION_DAYS go
 * - recover.ts: due messages without a live job get one again
 * - redeliver.ts: messages sent again under their own ids (qwn redeliver)
 * - release.ts: held and cycle messages become due
 * - list.ts: the ledger as qwn deliveries lists it
 * - status.ts: what the ledger says of messages and notifications, status by status
 * - lookups.ts: which notifications a message carries, which a cycle created
 */
export * from './dispatch.js';
export * from './known-first-attempt.js';
export * from './list.js';
export * from './lookups.js';
export * from './message.js';
export * from './prune.js';
export * from './record.js';
export * from './recover.js';
export * from './redeliver.js';
export * from './release.js';
export * from './sent-mark.js';
export * from './settle.js';
export * from './status.js';
export * from './take.js';
export * from './told.js';
