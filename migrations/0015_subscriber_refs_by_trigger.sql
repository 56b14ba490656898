-- The foreign keys from deliveries and messages to subscribers checked each inserted row by
-- locking its subscriber (FOR KEY SHARE): a Heap/LOCK WAL record per notification and per sent
-- message, and a multixact for the desks that every check of a storm reaches. pg_waldump of one
-- storm: 118,403 of its 1.51 million WAL records were those locks. As for events (0005, 0006,
-- 0012), statement triggers do what the keys did. 0006's refusal now checks subscribers too,
-- once per distinct subscriber and without a lock, and deleting a subscriber deletes its
-- notifications and messages. A message is written only from its notifications or in the
-- statement that inserts them, so the refusal on deliveries covers messages. Without the lock,
-- a subscriber deleted by hand while a check writes its notifications can leave those behind;
-- qwn itself never deletes a subscriber.
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_subscriber_id_subscribers_id_fk";
--> statement-breakpoint
ALTER TABLE "messages" DROP CONSTRAINT "messages_subscriber_id_subscribers_id_fk";
--> statement-breakpoint
DROP TRIGGER "deliveries_event_exists" ON "deliveries";--> statement-breakpoint
DROP FUNCTION "deliveries_refuse_missing_events"();--> statement-breakpoint
CREATE FUNCTION "deliveries_refuse_missing_references"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing_event bigint;
  missing_subscriber uuid;
BEGIN
  -- As 0012: a scalar probe per distinct value, so no plan can hash the referenced table.
  SELECT n."event_id" INTO missing_event
  FROM (SELECT DISTINCT "event_id" FROM "inserted_deliveries") n
  WHERE NOT (SELECT EXISTS (SELECT 1 FROM "events" e WHERE e."id" = n."event_id"))
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'delivery refers to event %, which does not exist', missing_event
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'deliveries_event_exists',
            TABLE = 'deliveries';
  END IF;
  SELECT n."subscriber_id" INTO missing_subscriber
  FROM (SELECT DISTINCT "subscriber_id" FROM "inserted_deliveries") n
  WHERE NOT (SELECT EXISTS (SELECT 1 FROM "subscribers" s WHERE s."id" = n."subscriber_id"))
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'delivery refers to subscriber %, which does not exist', missing_subscriber
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'deliveries_subscriber_exists',
            TABLE = 'deliveries';
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "deliveries_references_exist" AFTER INSERT ON "deliveries"
  REFERENCING NEW TABLE AS "inserted_deliveries"
  FOR EACH STATEMENT EXECUTE FUNCTION "deliveries_refuse_missing_references"();--> statement-breakpoint
CREATE FUNCTION "ledger_of_deleted_subscribers"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "deliveries" d USING "deleted_subscribers" s WHERE d."subscriber_id" = s."id";
  DELETE FROM "messages" m USING "deleted_subscribers" s WHERE m."subscriber_id" = s."id";
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "subscribers_delete_ledger" AFTER DELETE ON "subscribers"
  REFERENCING OLD TABLE AS "deleted_subscribers"
  FOR EACH STATEMENT EXECUTE FUNCTION "ledger_of_deleted_subscribers"();
