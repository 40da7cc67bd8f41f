import { describe, expect, test } from "bun:test";
import { issueTicket, redeemTicket } from "~/services/tickets/signed-ticket.ts";

const secret = "s".repeat(32);
const now = new Date("2026-11-21T12:00:00Z");

describe("signed single-use tickets", () => {
  test("a ticket is redeemed once, with its claims", () => {
    const ticket = issueTicket(secret, "tunnel", { namespaceId: "n1" }, 60_000, now);
    expect(redeemTicket(secret, "tunnel", ticket, now)?.namespaceId).toBe("n1");
    expect(redeemTicket(secret, "tunnel", ticket, now)).toBeNull();
  });

  test("one purpose's ticket never passes as another's", () => {
    const ticket = issueTicket(secret, "publish", { n: "n1" }, 60_000, now);
    expect(redeemTicket(secret, "tunnel", ticket, now)).toBeNull();
    expect(redeemTicket(secret, "live subscriber", ticket, now)).toBeNull();
  });

  test("expired, forged, tampered and oversized tickets are refused", () => {
    const ticket = issueTicket(secret, "tunnel", { namespaceId: "n1" }, 60_000, now);
    expect(redeemTicket(secret, "tunnel", ticket, new Date(now.getTime() + 60_001))).toBeNull();
    expect(redeemTicket("another secret of 32 characters!", "tunnel", ticket, now)).toBeNull();
    const [payload, mac] = ticket.split(".") as [string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    const forged = Buffer.from(JSON.stringify({ ...claims, namespaceId: "n2" })).toString("base64url");
    expect(redeemTicket(secret, "tunnel", `${forged}.${mac}`, now)).toBeNull();
    expect(redeemTicket(secret, "tunnel", "x".repeat(5000), now)).toBeNull();
    expect(redeemTicket(secret, "tunnel", "no-dot", now)).toBeNull();
  });
});
