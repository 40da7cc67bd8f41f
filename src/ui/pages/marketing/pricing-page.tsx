import { useId, useState } from "react";
import { Link } from "react-router";
import { PLAN_RATE_LIMIT_PER_SECOND, type Plan, plans, TRIAL_DAYS } from "~/lib/plans.ts";
import { reportEvent } from "~/ui/lib/events.ts";
import { SitePage } from "~/ui/pages/marketing/site-chrome.tsx";
import { usePublicConfig } from "~/ui/shell.tsx";

type Faq = { question: string; answer: string; mail?: boolean };

const faqs: Faq[] = [
  {
    question: "Is there a free trial?",
    answer: `Commercial teams get ${TRIAL_DAYS} days with no limits. Personal use stays on the free plan for as long as you like.`,
  },
  {
    question: "Is there a limit on requests?",
    answer: `Requests are unlimited on every plan. Each plan averages up to ${PLAN_RATE_LIMIT_PER_SECOND} requests per second, with short bursts allowed; a server you host yourself sets its own limit (INGEST_RATE_LIMIT).`,
  },
  {
    question: "Can I host Tapscope myself?",
    answer:
      "Yes. The tapscope binary is also the server: run it on your own machine with the embedded defaults, or with PostgreSQL and ClickHouse. The self-hosting guide has every setting.",
  },
  {
    question: "Do you offer annual plans or discounts?",
    answer: "Annual billing for Scale and Enterprise goes through our team: write to us and we will set it up.",
    mail: true,
  },
];

export function PricingPage() {
  const { supportEmail } = usePublicConfig();
  return (
    <SitePage title={"Pricing"} main="max-w-6xl py-12 sm:py-20">
      <div className="max-w-2xl">
        <h1 className="text-3xl font-semibold tracking-tight text-zinc-100 sm:text-5xl">Predictable pricing</h1>
        <p className="mt-4 text-lg text-zinc-400">Unlimited requests on every plan. Pay for seats and retention, not for traffic.</p>
      </div>
      <ul className="mt-12 grid gap-4 sm:grid-cols-2 lg:grid-cols-4">
        {plans.map((plan) => (
          <li key={plan.id}>
            <PlanCard plan={plan} supportEmail={supportEmail} />
          </li>
        ))}
      </ul>
      <section aria-labelledby="faq" className="mt-20 max-w-3xl">
        <h2 id="faq" className="text-2xl font-semibold tracking-tight text-zinc-100">
          Questions
        </h2>
        <div className="mt-6 divide-y divide-zinc-800 border-y border-zinc-800">
          {faqs.map((faq) => (
            <FaqEntry key={faq.question} faq={faq} supportEmail={supportEmail} />
          ))}
        </div>
      </section>
    </SitePage>
  );
}

function PlanCard({ plan, supportEmail }: { plan: Plan; supportEmail: string }) {
  const isFeatured = plan.id === "team";
  const button = `mt-6 block rounded-md px-4 py-2 text-center text-sm font-medium ${
    isFeatured ? "bg-zinc-100 text-zinc-900 hover:bg-white" : "border border-zinc-700 text-zinc-100 hover:bg-zinc-900"
  }`;
  return (
    <article
      aria-labelledby={`plan-${plan.id}`}
      className={`flex h-full flex-col rounded-xl border p-6 ${isFeatured ? "border-zinc-500 bg-zinc-900/60" : "border-zinc-800"}`}
    >
      <h2 id={`plan-${plan.id}`} className="font-medium text-zinc-100">
        {plan.name}
      </h2>
      <p className="mt-1 text-sm text-zinc-400">{plan.audience}</p>
      <p className="mt-6 text-4xl font-semibold tracking-tight text-zinc-100">
        {plan.price}
        {plan.period ? <span className="ml-1 text-sm font-normal text-zinc-400">{plan.period}</span> : null}
      </p>
      <ul className="mt-6 flex-1 space-y-2 text-sm text-zinc-300">
        {plan.features.map((feature) => (
          <li key={feature} className="flex gap-2">
            <span aria-hidden="true" className="text-emerald-400">
              ✓
            </span>
            {feature}
          </li>
        ))}
      </ul>
      {plan.id === "enterprise" ? (
        <a href={`mailto:${supportEmail}?subject=${encodeURIComponent("Tapscope Enterprise")}`} className={button}>
          Contact us
        </a>
      ) : (
        <Link
          to="/login"
          className={button}
          onClick={() => void reportEvent(`clickLogin_pricingPage_${plan.id}`, { location: "/pricing" })}
        >
          Get started
        </Link>
      )}
    </article>
  );
}

function FaqEntry({ faq, supportEmail }: { faq: Faq; supportEmail: string }) {
  const [isOpen, setOpen] = useState(false);
  const panel = useId();
  return (
    <div>
      <h3>
        <button
          type="button"
          aria-expanded={isOpen}
          aria-controls={panel}
          onClick={() => setOpen((open) => !open)}
          className="flex w-full items-center justify-between gap-4 py-4 text-left text-zinc-100 hover:text-white"
        >
          {faq.question}
          <span
            aria-hidden="true"
            className={`text-zinc-400 transition-transform motion-reduce:transition-none ${isOpen ? "rotate-45" : ""}`}
          >
            +
          </span>
        </button>
      </h3>
      <div id={panel} hidden={!isOpen} className="pb-4 text-zinc-400">
        <p>{faq.answer}</p>
        {faq.mail ? (
          <a href={`mailto:${supportEmail}`} className="mt-2 inline-block text-sky-300 hover:text-sky-200">
            {supportEmail}
          </a>
        ) : null}
      </div>
    </div>
  );
}
