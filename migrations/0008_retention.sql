-- Retention (src/pipeline/retention.ts) finds old events by age, asks whether an event has
-- deliveries left (the same index spares the delete trigger of 0005 a scan of the ledger), and
-- whether a warning id is still tracked at any place or point.
CREATE INDEX "deliveries_event_idx" ON "deliveries" USING btree ("event_id");--> statement-breakpoint
CREATE INDEX "events_detected_idx" ON "events" USING btree ("detected_at");--> statement-breakpoint
CREATE INDEX "warnings_warning_idx" ON "warnings" USING btree ("warning_id");