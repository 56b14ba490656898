-- deliveries_cycle_idx took an entry per notification, every one under the same key in a
-- storm (its cycle), where the index only served `poll --once`'s summary and the demo. Those
-- now find a cycle's notifications through its events (events_cycle_idx, then
-- deliveries_event_idx, which the writes keep anyway): createdInCycle in
-- src/pipeline/ledger-lookups.ts. The column stays; it says the same as its event's.
DROP INDEX "deliveries_cycle_idx";
