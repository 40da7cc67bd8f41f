import { WEBHOOK_SECRET } from "./stripe-standin.ts";

/** Billing on (no Stripe call is made: an org without a subscription is on Free, 3 containers). */
export const billingEnv = {
  STRIPE_SECRET_KEY: "sk_test_standin",
  STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
  STRIPE_PRICE_TEAM: "price_team_test",
  STRIPE_PRICE_SCALE: "price_scale_test",
  STRIPE_API_URL: "http://127.0.0.1:9",
};

export type Opened = { outcome: "ready"; ws: WebSocket } | { outcome: "refused"; status: string };

/** Opens a publish socket: ready (the server's first message), or refused at the upgrade. */
export function openPublisher(url: string): Promise<Opened> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    let isSettled = false;
    const settle = (value: Opened) => {
      if (isSettled) return;
      isSettled = true;
      resolve(value);
    };
    ws.onmessage = (m) => {
      if (String(m.data).includes('"ready"')) settle({ outcome: "ready", ws });
    };
    ws.onerror = (e) => settle({ outcome: "refused", status: (e as ErrorEvent).message ?? "error" });
    ws.onclose = (e) => settle({ outcome: "refused", status: String(e.code) });
  });
}
