-- The refusal of 0006, probed once per distinct event rather than once per inserted row. A
-- check's fan-out insert carries dozens of rows of one to three events: the per-row probe of
-- 0011 ran the same events_pkey lookup for each (5.7 s of a storm's Postgres, 1 ms per insert
-- statement, pg_stat_statements). A scalar probe still, so no plan can hash `events`.
CREATE OR REPLACE FUNCTION "deliveries_refuse_missing_events"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
BEGIN
  SELECT n."event_id" INTO missing
  FROM (SELECT DISTINCT "event_id" FROM "inserted_deliveries") n
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
