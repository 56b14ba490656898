-- A storm's check inserts an event and then dozens of delivery rows for it in one transaction.
-- The foreign key checked each of those rows by locking the event row (FOR KEY SHARE), and with
-- sixteen checks at once that tripled the insert (pg_stat_statements: 13.7 s → 5.5 s for a
-- storm and its escalation). A delivery's event is written by the same transaction, so the
-- check guards nothing the code can get wrong; what the key also did, take the deliveries
-- along when an event is deleted, a statement trigger still does.
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_event_id_events_id_fk";--> statement-breakpoint
CREATE FUNCTION "deliveries_of_deleted_events"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "deliveries" d USING "deleted_events" e WHERE d."event_id" = e."id";
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "events_delete_deliveries" AFTER DELETE ON "events"
  REFERENCING OLD TABLE AS "deleted_events"
  FOR EACH STATEMENT EXECUTE FUNCTION "deliveries_of_deleted_events"();
