-- A v1 check that writes events asks whether another point reported the same alerts in this
-- cycle (src/pipeline/check-point.ts, reportedElsewhere). Found by cycle, that read every event
-- of the cycle so far (3,615 rows, 1.4 ms, late in a v1 storm); by alert id, the alert's few.
CREATE INDEX "events_warning_idx" ON "events" USING btree ("warning_id");