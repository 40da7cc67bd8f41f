CREATE TABLE "worker_orgs" (
	"org_id" uuid PRIMARY KEY NOT NULL,
	"node_id" text,
	"connected_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "worker_orgs" ADD CONSTRAINT "worker_orgs_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;