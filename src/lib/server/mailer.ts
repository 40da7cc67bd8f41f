import nodemailer from "nodemailer";
import type { Config } from "~/lib/server/env.ts";

export type MailMessage = { to: string; subject: string; text: string; html?: string };

export type Mailer = {
  send: (message: MailMessage) => Promise<void>;
  close: () => void;
};

/** An SMTP mailer when SMTP_URL is set; undefined otherwise (callers fall back to the server log). */
export function createMailer(config: Pick<Config, "smtpUrl" | "mailFrom">): Mailer | undefined {
  if (!config.smtpUrl) return undefined;
  const transport = nodemailer.createTransport(config.smtpUrl);
  return {
    send: async (message) => {
      await transport.sendMail({ from: config.mailFrom, ...message });
    },
    close: () => transport.close(),
  };
}
