-- What the foreign key to events also did (migration 0005): refuse a delivery row whose event
-- does not exist. Checked once per statement against the rows it inserted, reading events by
-- primary key (an anti join on events_pkey) without locking them. In one session it adds about
-- a third to the insert (1.35 -> 1.76 s per 100,000 rows in statements of 67 rows); in a storm
-- and its escalation, with sixteen checks at once, 5.5 -> 7.3 s, where the key took 13.7 s.
CREATE FUNCTION "deliveries_refuse_missing_events"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
BEGIN
  SELECT n."event_id" INTO missing FROM "inserted_deliveries" n
  WHERE NOT EXISTS (SELECT 1 FROM "events" e WHERE e."id" = n."event_id")
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'delivery refers to event %, which does not exist', missing
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'deliveries_event_exists',
            TABLE = 'deliveries';
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "deliveries_event_exists" AFTER INSERT ON "deliveries"
  REFERENCING NEW TABLE AS "inserted_deliveries"
  FOR EACH STATEMENT EXECUTE FUNCTION "deliveries_refuse_missing_events"();
