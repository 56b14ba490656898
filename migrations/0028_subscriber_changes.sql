-- Every sending process reads a subscriber's changes before it sends to them: a message read
-- before its subscriber was paused, disabled, unsubscribed, deleted or given another address or
-- secret is read again rather than sent as it was (src/pipeline/subscriber-changes.ts). A first
-- attempt sent from its check's process carries the subscriber as the check read it, and any
-- message may wait for a send slot for up to a third of its lease: without this, an unsubscribe
-- that landed meanwhile did not stop it. Statement triggers write the rows, so that a change by
-- SQL counts as well as qwn's own. Each row keeps the clock time of its change: a reader asks
-- for the changes of the last minutes each time, so that a transaction that commits late is not
-- passed over.
CREATE TABLE "subscriber_changes" (
	"subscriber_id" uuid NOT NULL,
	"changed_at" timestamp with time zone DEFAULT clock_timestamp() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "subscriber_changes_at_idx" ON "subscriber_changes" USING btree ("changed_at");--> statement-breakpoint
CREATE FUNCTION "subscriber_changes_of_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "subscriber_changes" ("subscriber_id")
  SELECT n."id" FROM "changed_subscribers" n JOIN "previous_subscribers" o ON o."id" = n."id"
  WHERE n."active" IS DISTINCT FROM o."active"
     OR n."unsubscribed_at" IS DISTINCT FROM o."unsubscribed_at"
     OR n."email" IS DISTINCT FROM o."email"
     OR n."webhook_url" IS DISTINCT FROM o."webhook_url"
     OR n."webhook_secret" IS DISTINCT FROM o."webhook_secret"
     OR n."robot_kind" IS DISTINCT FROM o."robot_kind"
     OR n."robot_url" IS DISTINCT FROM o."robot_url"
     OR n."robot_secret" IS DISTINCT FROM o."robot_secret";
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "subscribers_changes_of_update" AFTER UPDATE ON "subscribers"
  REFERENCING OLD TABLE AS "previous_subscribers" NEW TABLE AS "changed_subscribers"
  FOR EACH STATEMENT EXECUTE FUNCTION "subscriber_changes_of_update"();--> statement-breakpoint
CREATE FUNCTION "subscriber_changes_of_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "subscriber_changes" ("subscriber_id") SELECT "id" FROM "removed_subscribers";
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "subscribers_changes_of_delete" AFTER DELETE ON "subscribers"
  REFERENCING OLD TABLE AS "removed_subscribers"
  FOR EACH STATEMENT EXECUTE FUNCTION "subscriber_changes_of_delete"();
