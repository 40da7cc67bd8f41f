import { useCallback, useEffect, useState } from "react";
import { useSearchParams } from "react-router";
import { type Plan, plans } from "~/lib/plans.ts";
import type { ActiveSubscription, GetBillingStatusResponse } from "~/lib/protocol/api/billing.ts";
import { ErrorNotice } from "~/ui/components/error-notice.tsx";
import { Spinner } from "~/ui/components/spinner.tsx";
import { api, describeError, type ErrorText } from "~/ui/lib/api.ts";
import { useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { Screen } from "~/ui/pages/dashboard/screen.tsx";
import { usePublicConfig } from "~/ui/shell.tsx";

type Loaded = { status: GetBillingStatusResponse; subscription: ActiveSubscription | null };

/** How long the screen waits for Stripe's webhook after a completed checkout before saying so. */
const WEBHOOK_WAIT_MS = 30_000;

/**
 * Billing: the plans with Free active and Upgrade links, or 'Subscribed!' with the plan, the amount, the subscription
 * id, Manage billing (Stripe's customer portal) and a folded 'Cancel?' section; the cancel in progress; the 'Your plan
 * was cancelled.' banner; a spinner while loading; the error of a failed load. Without Stripe configured it says billing
 * is off.
 */
export function BillingScreen() {
  const { org } = useDashboard();
  const orgId = org?.orgId;
  const [params, setParams] = useSearchParams();
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(params.get("error"));
  const [isCancelOpen, setCancelOpen] = useState(false);
  const [isCancelling, setCancelling] = useState(false);
  const [isCancelledBanner, setCancelledBanner] = useState(false);
  const [isOpeningPortal, setOpeningPortal] = useState(false);
  const [attempt, setAttempt] = useState(0);
  const isReturning = params.get("checkout") === "success";
  const isCheckoutCancelled = params.get("checkout") === "cancelled";

  const load = useCallback(
    async (signal?: AbortSignal) => {
      if (!orgId) return;
      const status = await api("GetBillingStatus", { orgId }, { signal });
      let subscription: ActiveSubscription | null = null;
      if (status.billingEnabled) {
        const answer = await api("GetSubscription", { orgId }, { signal });
        if (answer.error) throw new Error(answer.error);
        subscription = answer.activeSubscription;
      }
      setLoaded({ status, subscription });
      return subscription;
    },
    [orgId],
  );

  const [loadError, setLoadError] = useState<ErrorText | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: attempt re-runs the load on Retry
  useEffect(() => {
    const controller = new AbortController();
    setLoadError(null);
    load(controller.signal).catch((err: unknown) => {
      if (!controller.signal.aborted) setLoadError(describeError(err));
    });
    return () => controller.abort();
  }, [load, attempt]);

  // Back from checkout: the subscription appears when Stripe's webhook has arrived; ask once a second until then.
  useEffect(() => {
    if (!isReturning || !loaded) return;
    if (loaded.subscription) {
      setParams({}, { replace: true });
      return;
    }
    const started = Date.now();
    const timer = setInterval(() => {
      load()
        .then((subscription) => {
          if (subscription || Date.now() - started > WEBHOOK_WAIT_MS) {
            clearInterval(timer);
            setParams({}, { replace: true });
          }
        })
        .catch(() => {});
    }, 1000);
    return () => clearInterval(timer);
  }, [isReturning, loaded, load, setParams]);

  async function cancel(subscription: ActiveSubscription) {
    setCancelling(true);
    try {
      await api("CancelSubscription", { stripeSubscriptionId: subscription.stripeSubscriptionId });
      await load();
      setCancelledBanner(true);
      setCancelOpen(false);
    } catch (err) {
      setError(describeError(err).message);
    } finally {
      setCancelling(false);
    }
  }

  /** Stripe's customer portal (card, invoices) in this tab; Stripe sends the person back to this screen. */
  async function manageBilling() {
    if (!orgId) return;
    setOpeningPortal(true);
    try {
      const { url } = await api("OpenBillingPortal", { orgId });
      window.location.assign(url);
    } catch (err) {
      setError(describeError(err).message);
      setOpeningPortal(false);
    }
  }

  return (
    <Screen title="Billing" description="Plans for your organization.">
      {error ? (
        <p role="alert" className="rounded-md border border-red-500/30 bg-red-500/10 px-3 py-2 text-sm text-red-300">
          {error}
        </p>
      ) : null}
      {loadError ? (
        <ErrorNotice error={loadError} lead="Billing could not be loaded:">
          <button
            type="button"
            onClick={() => setAttempt((n) => n + 1)}
            className="ml-3 rounded-md border border-red-400/40 px-2 py-0.5 text-red-200 hover:bg-red-500/20"
          >
            Retry
          </button>
        </ErrorNotice>
      ) : null}
      {isCheckoutCancelled ? (
        <div
          role="status"
          className="flex items-center justify-between gap-3 rounded-md border border-zinc-700 bg-zinc-900 px-3 py-2 text-sm text-zinc-200"
        >
          Checkout was cancelled: nothing was charged and your plan did not change.
          <button
            type="button"
            onClick={() => setParams({}, { replace: true })}
            aria-label="Dismiss"
            className="px-2 text-zinc-400 hover:text-zinc-100"
          >
            ×
          </button>
        </div>
      ) : null}
      {isCancelledBanner ? (
        <div
          role="status"
          className="flex items-center justify-between rounded-md border border-zinc-700 bg-zinc-900 px-3 py-2 text-sm text-zinc-200"
        >
          Your plan was cancelled.
          <button
            type="button"
            onClick={() => setCancelledBanner(false)}
            aria-label="Dismiss"
            className="px-2 text-zinc-400 hover:text-zinc-100"
          >
            ×
          </button>
        </div>
      ) : null}
      {!loaded && !error && !loadError ? (
        <div className="flex items-center gap-2 text-sm text-zinc-400">
          <Spinner /> Loading billing…
        </div>
      ) : null}
      {loaded && !loaded.status.billingEnabled ? (
        <p className="rounded-md border border-zinc-800 bg-zinc-900/40 px-3 py-2 text-sm text-zinc-300">
          Billing is off on this server: every feature is available to this organization and no plan limits apply.
        </p>
      ) : null}
      {loaded?.subscription ? (
        <Subscribed
          subscription={loaded.subscription}
          isCancelOpen={isCancelOpen}
          setCancelOpen={setCancelOpen}
          isCancelling={isCancelling}
          onCancel={cancel}
          isOpeningPortal={isOpeningPortal}
          onManage={() => void manageBilling()}
        />
      ) : null}
      {loaded && !loaded.subscription && isReturning ? (
        <p className="flex items-center gap-2 text-sm text-zinc-300">
          <Spinner /> Payment received: waiting for Stripe to confirm the subscription…
        </p>
      ) : null}
      {loaded && !loaded.subscription ? <PlanTable orgId={orgId ?? ""} billingEnabled={loaded.status.billingEnabled} /> : null}
    </Screen>
  );
}

function isTrial(subscription: ActiveSubscription): boolean {
  return subscription.status === "trialing";
}

/** A day as people write it: "Dec 11, 2026". */
function day(iso: string): string {
  return new Date(iso).toLocaleDateString("en-US", { dateStyle: "medium" });
}

function money(cents: number, currency: string): string {
  return new Intl.NumberFormat("en-US", { style: "currency", currency: currency.toUpperCase() }).format(cents / 100);
}

function Subscribed({
  subscription,
  isCancelOpen,
  setCancelOpen,
  isCancelling,
  onCancel,
  isOpeningPortal,
  onManage,
}: {
  subscription: ActiveSubscription;
  isCancelOpen: boolean;
  setCancelOpen: (open: boolean) => void;
  isCancelling: boolean;
  onCancel: (subscription: ActiveSubscription) => void;
  isOpeningPortal: boolean;
  onManage: () => void;
}) {
  return (
    <section aria-label="Subscription" className="rounded-lg border border-emerald-500/30 bg-emerald-500/5 p-5">
      <h2 className="text-lg font-semibold text-emerald-300">Subscribed!</h2>
      <dl className="mt-4 grid gap-3 text-sm sm:grid-cols-3">
        <div>
          <dt className="text-zinc-400">Plan</dt>
          <dd className="text-zinc-100">{subscription.planName}</dd>
        </div>
        <div>
          <dt className="text-zinc-400">Amount</dt>
          <dd className="text-zinc-100">{money(subscription.amountCents, subscription.currency)} per month</dd>
        </div>
        <div className="min-w-0">
          <dt className="text-zinc-400">Subscription</dt>
          <dd className="truncate font-mono text-xs text-zinc-300">{subscription.stripeSubscriptionId}</dd>
        </div>
      </dl>
      {isTrial(subscription) && subscription.trialEnd ? (
        <p className="mt-3 text-sm text-zinc-400">
          Trial until {day(subscription.trialEnd)}: no limits. The first payment is taken then, unless you cancel before.
        </p>
      ) : subscription.currentPeriodEnd && subscription.status !== "canceled" ? (
        <p className="mt-3 text-sm text-zinc-400" data-testid="renewal">
          Renews on {day(subscription.currentPeriodEnd)}.
        </p>
      ) : null}
      {subscription.status === "past_due" ? (
        <p role="alert" className="mt-3 text-sm text-amber-300">
          The last payment failed: Stripe will retry it. Update the card with Manage billing.
        </p>
      ) : null}
      <div className="mt-4 flex flex-wrap items-center gap-3">
        <button
          type="button"
          onClick={onManage}
          disabled={isOpeningPortal}
          className="flex items-center gap-2 rounded-md border border-zinc-700 px-3 py-1.5 text-sm text-zinc-100 hover:bg-zinc-800 disabled:opacity-50"
        >
          {isOpeningPortal ? <Spinner /> : null}
          Manage billing
        </button>
        <span className="text-xs text-zinc-500">Card, invoices and receipts, on Stripe.</span>
      </div>
      <div className="mt-5 border-t border-zinc-800 pt-4">
        <button
          type="button"
          aria-expanded={isCancelOpen}
          onClick={() => setCancelOpen(!isCancelOpen)}
          className="text-sm text-zinc-400 hover:text-zinc-100"
        >
          Cancel?
        </button>
        {isCancelOpen ? (
          <div className="mt-3 flex flex-wrap items-center gap-3">
            <p className="text-sm text-zinc-400" data-testid="cancel-effect">
              {isTrial(subscription)
                ? "Cancelling ends the trial now: the organization returns to the Free plan and its limits at once, and nothing is charged."
                : `Cancelling ends the plan now, not at the end of the paid period${subscription.currentPeriodEnd ? ` (${day(subscription.currentPeriodEnd)})` : ""}: the organization returns to the Free plan and its limits at once.`}
            </p>
            <button
              type="button"
              disabled={isCancelling}
              onClick={() => onCancel(subscription)}
              className="flex items-center gap-2 rounded-md border border-red-500/40 px-3 py-1.5 text-sm text-red-300 hover:bg-red-500/10 disabled:opacity-50"
            >
              {isCancelling ? <Spinner /> : null}
              Cancel subscription
            </button>
          </div>
        ) : null}
      </div>
    </section>
  );
}

function PlanTable({ orgId, billingEnabled }: { orgId: string; billingEnabled: boolean }) {
  const { supportEmail } = usePublicConfig();
  const action = (plan: Plan) => {
    if (plan.id === "free") return null;
    const className = "mt-4 rounded-md border border-zinc-700 px-3 py-1.5 text-center text-sm text-zinc-100 hover:bg-zinc-800";
    if (plan.tier && billingEnabled)
      return (
        <a href={`/api/StripeRedirect?org_id=${encodeURIComponent(orgId)}&tier_name=${plan.tier}`} className={className}>
          Upgrade
        </a>
      );
    return (
      <a href={`mailto:${supportEmail}?subject=${encodeURIComponent(`Tapscope ${plan.name} plan`)}`} className={className}>
        {plan.id === "enterprise" ? "Contact us" : "Upgrade"}
      </a>
    );
  };
  return (
    <>
      <div className="grid gap-4 sm:grid-cols-2 xl:grid-cols-4">
        {plans.map((plan) => (
          <section key={plan.id} aria-label={plan.name} className="flex flex-col rounded-lg border border-zinc-800 bg-zinc-900/40 p-4">
            <div className="flex items-center justify-between">
              <h2 className="text-sm font-medium text-zinc-100">{plan.name}</h2>
              {plan.id === "free" && billingEnabled ? (
                <span className="rounded bg-emerald-500/15 px-1.5 py-0.5 text-[10px] font-semibold tracking-wide text-emerald-400">
                  ACTIVE
                </span>
              ) : null}
            </div>
            <p className="mt-3 text-2xl font-semibold text-zinc-100">
              {plan.price}
              {plan.period ? <span className="ml-1 text-xs font-normal text-zinc-400">{plan.period}</span> : null}
            </p>
            <ul className="mt-4 flex-1 space-y-1.5 text-sm text-zinc-400">
              {plan.features.map((feature) => (
                <li key={feature}>{feature}</li>
              ))}
            </ul>
            {action(plan)}
          </section>
        ))}
      </div>
      <p className="text-sm text-zinc-400">
        Compare plans in detail on the{" "}
        <a href="/pricing" target="_blank" rel="noreferrer" className="text-zinc-300 underline">
          pricing page
        </a>
        .
      </p>
    </>
  );
}
