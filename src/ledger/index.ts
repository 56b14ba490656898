/**
 * The delivery ledger: `deliveries`, `messages` and `first_attempt_batches` (docs/design.md).
 * Everything outside src/ledger/ comes in through this file.
 *
 * - message.ts: a message's channel, and what a check's statement created
 * - record.ts: a check's notifications and their messages, in the check's transaction
 * - told.ts: what each subscriber was told of a warning's story
 * - dispatch.ts: the deliver jobs that carry a message's attempts
 * - take.ts: a deliver job takes its messages, with their subscribers and notifications
 * - sent-mark.ts: sent messages marked in group commits
 * - deferred.ts: messages whose row is written only when they need one
 * - release.ts: held and cycle messages become due
 * - lookups.ts: which notifications a message carries, which a cycle created
 */
export * from './deferred.js';
export * from './dispatch.js';
export * from './lookups.js';
export * from './message.js';
export * from './record.js';
export * from './release.js';
export * from './sent-mark.js';
export * from './take.js';
export * from './told.js';
