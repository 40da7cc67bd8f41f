import type Stripe from "stripe";
import type { Db } from "#db/client.ts";
import type { Config } from "~/lib/server/env.ts";
import type { Mailer } from "~/lib/server/mailer.ts";
import type { SocketRevoker } from "~/services/access/grants.ts";
import type { SpendTicketEverywhere } from "~/services/tickets/signed-ticket.ts";

/** What every service verb receives: transport-free dependencies (built once, by createRuntime). */
export type ServiceContext = {
  db: Db;
  config: Config;
  now: () => Date;
  /** Absent when SMTP_URL is not set: sign-in links then go to the server log. */
  mailer?: Mailer;
  /** The app's open sockets: revoking a credential closes those it authorised (absent outside an app). */
  sockets?: SocketRevoker;
  /** The Stripe client, when billing is configured (STRIPE_*). */
  stripe?: Stripe;
  /** In a cluster: spends a socket ticket's nonce on every node, so a ticket opens one socket wherever it lands. */
  spendTicketEverywhere?: SpendTicketEverywhere;
};
