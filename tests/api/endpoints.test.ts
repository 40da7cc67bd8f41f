import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { EventTarget } from "~/engines/ingest/sinks.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { backends, startTestApp, type TestApp } from "../support/app.ts";
import { tracedEvent } from "../support/event-factory.ts";

// The Endpoints screen's settings through the API (route patterns, alert rules), and what ingest then does with the
// events it takes. Who may call each is the security matrix's (tests/api/security.test.ts).

const rule = (overrides: Record<string, unknown> = {}) => ({
  name: "checkout errors",
  metric: "server_errors",
  threshold: 5,
  windowMinutes: 5,
  minRequests: 10,
  endpoint: { service: "shop", host: "", method: "POST", route: "/orders/{id}" },
  filterText: "",
  emails: [],
  webhookUrl: null,
  ...overrides,
});

for (const backend of backends) {
  describe(`endpoints settings [${backend}]`, () => {
    let t: TestApp;
    const taken: Array<{ target: EventTarget; events: TracedEvent[] }> = [];
    beforeAll(async () => {
      t = await startTestApp({ backend });
      t.runtime.sinks.add({ accept: (target, events) => void taken.push({ target, events: [...events] }) });
    }, 60_000);
    afterAll(() => t.close());

    /** Publishes JSON events as a publisher would, and returns them as ingest handed them on. */
    function ingest(namespaceId: string, paths: string[]): TracedEvent[] {
      taken.length = 0;
      const events = paths.map((p) => ({ ...tracedEvent({ http_req_path: p }), http_route: "/forged" }));
      const reply = t.runtime.ingest.handle({ namespaceId, linkId: null }, { type: "events", seq: 1, events });
      expect(reply).toMatchObject({ type: "ack", accepted: paths.length });
      return taken.flatMap((x) => x.events);
    }

    test("ingest gives each event its route from its path, whatever the publisher sent", async () => {
      const u = await t.onboardedUser();
      const routes = ingest(u.namespaceId, ["/users/42?tab=1", "/users/me", "/files/app.3f2a9c1b.js"]).map((e) => e.http_route);
      expect(routes).toEqual(["/users/{id}", "/users/me", "/files/app.{hex}.js"]);
    });

    test("an admin's patterns are kept, read back in order, and win at ingest from then on", async () => {
      const u = await t.onboardedUser();
      const set = await t.call(
        "/api/SetRoutePatterns",
        { namespaceId: u.namespaceId, patterns: [" /users/{login} ", "/static/{path*}"] },
        { cookie: u.cookie },
      );
      expect(set.status).toBe(200);
      expect(set.body).toEqual({ patterns: ["/users/{login}", "/static/{path*}"] });
      const got = await t.call("/api/GetRoutePatterns", { namespaceId: u.namespaceId }, { cookie: u.cookie });
      expect(got.body).toEqual({ patterns: ["/users/{login}", "/static/{path*}"] });
      expect(ingest(u.namespaceId, ["/users/me", "/static/js/a.js", "/orders/7"]).map((e) => e.http_route)).toEqual([
        "/users/{login}",
        "/static/{path*}",
        "/orders/{id}",
      ]);
      // Another namespace is untouched.
      const other = await t.onboardedUser();
      expect(ingest(other.namespaceId, ["/users/me"]).map((e) => e.http_route)).toEqual(["/users/me"]);
    });

    test("a bad list is refused with what is wrong, and changes nothing", async () => {
      const u = await t.onboardedUser();
      await t.call("/api/SetRoutePatterns", { namespaceId: u.namespaceId, patterns: ["/a/{x}"] }, { cookie: u.cookie });
      for (const [patterns, error] of [
        [["/a/{x}", "/a/{y}"], '"/a/{y}" matches the same paths as "/a/{x}"'],
        [["no-slash"], '"no-slash" must start with /'],
        [["/f/{p*}/x"], '"{p*}" in "/f/{p*}/x": {name*} can only end a pattern'],
      ] as const) {
        const res = await t.call("/api/SetRoutePatterns", { namespaceId: u.namespaceId, patterns }, { cookie: u.cookie });
        expect([res.status, res.body.error]).toEqual([400, error]);
      }
      const tooMany = Array.from({ length: 101 }, (_, i) => `/p${i}`);
      expect((await t.call("/api/SetRoutePatterns", { namespaceId: u.namespaceId, patterns: tooMany }, { cookie: u.cookie })).status).toBe(
        400,
      );
      expect((await t.call("/api/GetRoutePatterns", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body).toEqual({
        patterns: ["/a/{x}"],
      });
      expect(ingest(u.namespaceId, ["/a/b"]).map((e) => e.http_route)).toEqual(["/a/{x}"]);
    });

    test("alert rules: saved whole, listed with their state, the webhook's secret shown once and never listed", async () => {
      const u = await t.onboardedUser();
      const created = await t.call(
        "/api/SaveAlertRule",
        { namespaceId: u.namespaceId, rule: rule({ emails: [u.email.toUpperCase()], webhookUrl: "https://hooks.example.com/t/1" }) },
        { cookie: u.cookie },
      );
      expect(created.status).toBe(200);
      expect(created.body.webhookSecret).toMatch(/^whsec_[\w-]{32}$/);
      const { rule: saved } = created.body;
      expect(saved).toMatchObject({ name: "checkout errors", state: "ok", emails: [u.email], lastValue: null, stateSince: null });
      const listed = await t.call("/api/ListAlerts", { namespaceId: u.namespaceId }, { cookie: u.cookie });
      expect(listed.body).toEqual({ rules: [saved], events: [], deliveries: [] });
      expect(JSON.stringify(listed.body)).not.toContain(created.body.webhookSecret);

      // Editing keeps the secret unless asked to rotate it.
      const edited = await t.call(
        "/api/SaveAlertRule",
        { namespaceId: u.namespaceId, ruleId: saved.ruleId, rule: rule({ threshold: 9, webhookUrl: "https://hooks.example.com/t/1" }) },
        { cookie: u.cookie },
      );
      expect([edited.body.rule.threshold, edited.body.webhookSecret]).toEqual([9, null]);
      const rotated = await t.call(
        "/api/SaveAlertRule",
        {
          namespaceId: u.namespaceId,
          ruleId: saved.ruleId,
          rule: rule({ webhookUrl: "https://hooks.example.com/t/1" }),
          rotateSecret: true,
        },
        { cookie: u.cookie },
      );
      expect(rotated.body.webhookSecret).toMatch(/^whsec_/);
      expect(rotated.body.webhookSecret).not.toBe(created.body.webhookSecret);

      expect(
        (await t.call("/api/DeleteAlertRule", { namespaceId: u.namespaceId, ruleId: saved.ruleId }, { cookie: u.cookie })).status,
      ).toBe(200);
      expect((await t.call("/api/ListAlerts", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.rules).toEqual([]);
    });

    test("alert rules that cannot work are refused with why, and nothing is saved", async () => {
      const u = await t.onboardedUser();
      const stranger = await t.onboardedUser();
      const refused = async (body: Record<string, unknown>) => {
        const res = await t.call("/api/SaveAlertRule", { namespaceId: u.namespaceId, ...body }, { cookie: u.cookie });
        expect(res.status).toBe(400);
        return res.body.error as string;
      };
      expect(await refused({ rule: rule({ emails: [stranger.email] }) })).toBe(
        `${stranger.email} is not a member of this namespace: alerts mail members only`,
      );
      expect(await refused({ rule: rule({ filterText: "response.status >> 5" }) })).toMatch(/^filter: /);
      expect(await refused({ rule: rule({ threshold: 150 }) })).toBe("an error rate's threshold is a percentage, 0 to 100");
      expect(await refused({ rule: rule({ webhookUrl: "ftp://hooks.example.com" }) })).toBe("the webhook URL must be http:// or https://");
      expect(await refused({ rule: rule({ webhookUrl: "https://user:pw@hooks.example.com" }) })).toMatch(/must not carry credentials/);
      expect(await refused({ rule: rule({ windowMinutes: 0 }) })).toMatch(/windowMinutes/);
      expect(await refused({ rule: rule({ metric: "p50" }) })).toMatch(/metric/);
      expect(await refused({ rule: rule({ emails: Array.from({ length: 11 }, (_, i) => `a${i}@example.com`) }) })).toMatch(/emails/);
      expect((await t.call("/api/ListAlerts", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.rules).toEqual([]);

      // At most 20 rules a namespace.
      for (let i = 0; i < 20; i++) {
        expect(
          (await t.call("/api/SaveAlertRule", { namespaceId: u.namespaceId, rule: rule({ name: `r${i}` }) }, { cookie: u.cookie })).status,
        ).toBe(200);
      }
      expect(await refused({ rule: rule({ name: "one more" }) })).toBe("a namespace has at most 20 alert rules");
    });

    test("another namespace's rule is not found, even by its id", async () => {
      const a = await t.onboardedUser();
      const b = await t.onboardedUser();
      const created = await t.call("/api/SaveAlertRule", { namespaceId: a.namespaceId, rule: rule() }, { cookie: a.cookie });
      const ruleId = created.body.rule.ruleId;
      const asB = await t.call("/api/DeleteAlertRule", { namespaceId: b.namespaceId, ruleId }, { cookie: b.cookie });
      expect([asB.status, asB.body.error]).toEqual([404, "alert rule not found"]);
      const editAsB = await t.call("/api/SaveAlertRule", { namespaceId: b.namespaceId, ruleId, rule: rule() }, { cookie: b.cookie });
      expect(editAsB.status).toBe(404);
      expect((await t.call("/api/ListAlerts", { namespaceId: a.namespaceId }, { cookie: a.cookie })).body.rules).toHaveLength(1);
    });
  });
}
