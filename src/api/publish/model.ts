import { t } from "elysia";

export const publishModel = {
  joinPublisherBody: t.Object({ linkId: t.Optional(t.String({ maxLength: 200 })) }),
  joinPublisherResponse: t.Object({
    websocketUrl: t.String(),
    linkId: t.Optional(t.String()),
    linkUrl: t.Optional(t.String()),
    namespaceId: t.Optional(t.String()),
    expiresAt: t.Optional(t.String()),
    error: t.Optional(t.String()),
  }),
};
