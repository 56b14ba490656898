-- Retention (src/pipeline/retention.ts) finds old events by age, and asks whether an event has
-- deliveries left; the same index spares the delete trigger of 0005 a scan of the ledger.
CREATE INDEX "deliveries_event_idx" ON "deliveries" USING btree ("event_id");--> statement-breakpoint
CREATE INDEX "events_detected_idx" ON "events" USING btree ("detected_at");