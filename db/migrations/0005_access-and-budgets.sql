ALTER TABLE "event_log" ADD COLUMN "bytes" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "login_links" ADD COLUMN "browser_hash" text;