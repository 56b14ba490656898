-- The refusal of 0006 planned as a hash anti join: a trigger's query keeps a generic plan, and
-- with a transition table of unknown size the planner hashed all of `events` on every insert
-- statement (1.2 ms each, 6.6 s of a storm and its escalation at 3,438 events, growing with
-- the table). Written as a scalar probe per inserted row, the plan is an index lookup on
-- events_pkey per row whatever the planner guesses, and stops at the first missing event.
CREATE OR REPLACE FUNCTION "deliveries_refuse_missing_events"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
BEGIN
  SELECT n."event_id" INTO missing FROM "inserted_deliveries" n
  WHERE NOT (SELECT EXISTS (SELECT 1 FROM "events" e WHERE e."id" = n."event_id"))
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'delivery refers to event %, which does not exist', missing
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'deliveries_event_exists',
            TABLE = 'deliveries';
  END IF;
  RETURN NULL;
END
$$;
