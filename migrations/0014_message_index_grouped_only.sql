-- A direct notification is its own message (message_id = id, every webhook by default): its
-- entry in deliveries_message_idx repeated the primary key's, one random-uuid index entry per
-- notification of a storm. The index keeps the grouped notifications only; lookups by message
-- id read direct ones by primary key (carriedBy in src/pipeline/ledger-lookups.ts).
DROP INDEX "deliveries_message_idx";--> statement-breakpoint
CREATE INDEX "deliveries_message_idx" ON "deliveries" USING btree ("message_id") WHERE "deliveries"."message_id" <> "deliveries"."id";