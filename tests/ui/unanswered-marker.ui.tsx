import { afterEach, expect, test } from "bun:test";
import { cleanup, render, screen, within } from "@testing-library/react";
import { ResultsList } from "~/ui/explorer/results-list.tsx";
import { EventList } from "~/ui/live/event-list.tsx";
import { RequestDetail } from "~/ui/request-detail/request-detail.tsx";
import { makeEvent } from "./live-event-factory.ts";

afterEach(cleanup);

const hung = makeEvent({ http_req_path: "/hang", http_resp_status_code: 0, http_duration: 2_004_000, http_unanswered: "client_aborted" });
const dropped = makeEvent({ http_req_path: "/drop", http_resp_status_code: 0, http_duration: 300_000, http_unanswered: "server_closed" });
const answered = makeEvent({ http_req_path: "/ok", http_unanswered: "" });

test("Live rows mark a request that got no answer with why, the wait on hover; answered rows have no mark", () => {
  render(<EventList events={[hung, dropped, answered]} version={1} selectedId={null} onSelect={() => {}} initialHeight={800} />);
  const row = (e: typeof hung) => document.querySelector<HTMLElement>(`[role="row"][data-event-id="${e.event_id}"]`)!;
  const mark = row(hung).querySelector("[data-unanswered]")!;
  expect(mark.textContent).toContain("aborted");
  expect(mark.getAttribute("title")).toBe("No response: the client gave up after 2.00s");
  // What a screen reader reads: the sentence, not the word.
  expect(row(dropped).querySelector("[data-unanswered]")?.textContent).toContain(
    "No response: the server closed the connection after 300ms",
  );
  expect(row(answered).querySelector("[data-unanswered]")).toBeNull();
});

test("the explorer's rows mark it too, and the detail says it in a sentence", () => {
  render(
    <ResultsList
      rows={[{ ...hung }, { ...answered, time: hung.time - 1 }]}
      tz="UTC"
      sort={{ key: "time", dir: "desc" }}
      onSort={() => undefined}
      selectedId={null}
      onSelect={() => undefined}
    />,
  );
  const rows = screen.getAllByRole("row").slice(1);
  expect(rows[0]!.querySelector("[data-unanswered]")?.textContent).toContain("aborted");
  expect(rows[1]!.querySelector("[data-unanswered]")).toBeNull();
  cleanup();
  render(<RequestDetail event={hung} />);
  expect(screen.getByTestId("detail-unanswered").textContent).toBe("No response: the client gave up after 2.00s");
  cleanup();
  render(<RequestDetail event={answered} />);
  expect(screen.queryByTestId("detail-unanswered")).toBeNull();
});

test("a reason the agent never writes is shown as text, as 'no answer'", () => {
  const odd = makeEvent({ http_resp_status_code: 0, http_duration: 12_300, http_unanswered: "<b>x</b>" });
  render(<EventList events={[odd]} version={1} selectedId={null} onSelect={() => {}} initialHeight={800} />);
  const mark = within(screen.getAllByRole("row")[1]!).getByText("no answer");
  expect(mark.parentElement!.querySelector("b")).toBeNull();
  expect(mark.parentElement!.textContent).toBe("no answerNo response: it ended after 12.3ms");
});
