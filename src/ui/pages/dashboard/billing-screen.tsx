import { plans } from "~/lib/plans.ts";
import { Screen } from "~/ui/pages/dashboard/screen.tsx";
import { usePublicConfig } from "~/ui/shell.tsx";

// Payments are not wired to a card provider in a self-hosted install: upgrades go through support.
export function BillingScreen() {
  const { supportEmail } = usePublicConfig();
  return (
    <Screen title="Billing" description="Plans for your organization.">
      <div className="grid gap-4 sm:grid-cols-2 xl:grid-cols-4">
        {plans.map((plan) => (
          <section key={plan.name} aria-label={plan.name} className="flex flex-col rounded-lg border border-zinc-800 bg-zinc-900/40 p-4">
            <div className="flex items-center justify-between">
              <h2 className="text-sm font-medium text-zinc-100">{plan.name}</h2>
              {plan.name === "Free" ? (
                <span className="rounded bg-emerald-500/15 px-1.5 py-0.5 text-[10px] font-semibold tracking-wide text-emerald-400">
                  ACTIVE
                </span>
              ) : null}
            </div>
            <p className="mt-3 text-2xl font-semibold text-zinc-100">
              {plan.price}
              {plan.period ? <span className="ml-1 text-xs font-normal text-zinc-500">{plan.period}</span> : null}
            </p>
            <ul className="mt-4 flex-1 space-y-1.5 text-sm text-zinc-400">
              {plan.features.map((feature) => (
                <li key={feature}>{feature}</li>
              ))}
            </ul>
            {plan.name === "Free" ? null : (
              <a
                href={`mailto:${supportEmail}?subject=${encodeURIComponent(`Tapscope ${plan.name} plan`)}`}
                className="mt-4 rounded-md border border-zinc-700 px-3 py-1.5 text-center text-sm text-zinc-100 hover:bg-zinc-800"
              >
                {plan.name === "Enterprise" ? "Contact us" : "Upgrade"}
              </a>
            )}
          </section>
        ))}
      </div>
      <p className="text-sm text-zinc-500">
        Compare plans in detail on the{" "}
        <a href="/pricing" target="_blank" rel="noreferrer" className="text-zinc-300 underline">
          pricing page
        </a>
        .
      </p>
    </Screen>
  );
}
