import { afterEach, describe, expect, test } from "bun:test";
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { LoginForm, type SubmitEmail } from "~/ui/pages/login/login-form.tsx";

afterEach(cleanup);

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function renderForm(props: Partial<Parameters<typeof LoginForm>[0]> = {}) {
  const alerts: string[] = [];
  const calls: Array<{ email: string; next: string | null }> = [];
  const pending = deferred<{ error?: string; delivery?: "email" | "log" }>();
  const submitEmail: SubmitEmail = (email, next) => {
    calls.push({ email, next });
    return pending.promise;
  };
  render(
    <LoginForm
      next={null}
      hasGoogle={false}
      hasGithub={false}
      supportEmail="help@example.test"
      submitEmail={submitEmail}
      alert={(message) => alerts.push(message)}
      {...props}
    />,
  );
  return { alerts, calls, pending };
}

async function submit(email: string) {
  fireEvent.change(screen.getByPlaceholderText("Enter your email..."), { target: { value: email } });
  await act(async () => {
    fireEvent.submit(screen.getByRole("button", { name: /sign in/i }).closest("form")!);
  });
}

describe("login form", () => {
  test("OAuth buttons are hidden when no provider is configured", () => {
    renderForm();
    expect(screen.queryByText("Continue with Google")).toBeNull();
    expect(screen.queryByText("Continue with Github")).toBeNull();
    expect(screen.queryByText("or")).toBeNull();
    const input = screen.getByPlaceholderText("Enter your email...") as HTMLInputElement;
    expect(input.type).toBe("email");
    expect(input.required).toBe(true);
  });

  test("configured providers link to their redirects with next forwarded", () => {
    renderForm({ hasGoogle: true, hasGithub: true, next: "/dashboard/acme/users" });
    expect(screen.getByRole("link", { name: /Continue with Google/ }).getAttribute("href")).toBe(
      "/api/GoogleRedirect?next=%2Fdashboard%2Facme%2Fusers",
    );
    expect(screen.getByRole("link", { name: /Continue with Github/ }).getAttribute("href")).toBe(
      "/api/GithubRedirect?next=%2Fdashboard%2Facme%2Fusers",
    );
    expect(screen.queryByText("or")).not.toBeNull();
  });

  test("only the configured provider shows", () => {
    renderForm({ hasGithub: true });
    expect(screen.queryByText("Continue with Google")).toBeNull();
    expect(screen.queryByText("Continue with Github")).not.toBeNull();
  });

  test("submitting disables the button and shows a spinner, then the magic-link confirmation", async () => {
    const { calls, pending } = renderForm({ next: "/dashboard/x/live" });
    await submit("ada@example.test");
    const button = screen.getByRole("button", { name: /sign in/i }) as HTMLButtonElement;
    expect(button.disabled).toBe(true);
    expect(screen.queryByRole("status", { name: "Loading" })).not.toBeNull();
    expect(calls).toEqual([{ email: "ada@example.test", next: "/dashboard/x/live" }]);

    await act(async () => pending.resolve({}));
    const message = screen.getByRole("status");
    expect(message.textContent).toBe(
      "We emailed a magic link to ada@example.test. Click the link to continue. Need help? Contact support.",
    );
    expect(screen.getByRole("link", { name: "Contact support" }).getAttribute("href")).toBe("mailto:help@example.test");
    expect(screen.queryByRole("button", { name: /sign in/i })).toBeNull();
  });

  test("a failed call alerts 'login failed: {error}' and returns to idle", async () => {
    const { alerts, pending } = renderForm();
    await submit("ada@example.test");
    await act(async () => pending.reject(new Error("got unexpected status code 429: too many sign-in attempts")));
    expect(alerts).toEqual(["login failed: got unexpected status code 429: too many sign-in attempts"]);
    const button = screen.getByRole("button", { name: /sign in/i }) as HTMLButtonElement;
    expect(button.disabled).toBe(false);
    expect(screen.queryByText(/We emailed a magic link/)).toBeNull();
  });

  test("an error field in a 200 answer is a failure too", async () => {
    const { alerts, pending } = renderForm();
    await submit("ada@example.test");
    await act(async () => pending.resolve({ error: "mail server unavailable" }));
    expect(alerts).toEqual(["login failed: mail server unavailable"]);
  });

  test("without SMTP the server logged the link: the page says where it went, not that it was e-mailed", async () => {
    const { pending } = renderForm();
    await submit("ada@example.test");
    await act(async () => pending.resolve({ delivery: "log" }));
    const message = screen.getByRole("status").textContent ?? "";
    expect(message).toContain("This server cannot send e-mail");
    expect(message).toContain("the sign-in link for ada@example.test was written to the server's log");
    expect(message).toContain("magic link for");
    expect(message).not.toContain("We emailed");
  });
});
