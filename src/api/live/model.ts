import { t } from "elysia";

const error = t.Optional(t.String());

export const liveModel = {
  joinSubscriberBody: t.Object({ namespaceId: t.String({ maxLength: 64 }) }),
  joinSubscriberResponse: t.Object({ websocketUrl: t.String(), error }),
  hasSeenPublisherBody: t.Object({ orgId: t.String({ maxLength: 64 }) }),
  hasSeenPublisherResponse: t.Object({ hasSeenPublisher: t.Boolean(), error }),
  getLinkBody: t.Object({ linkId: t.String({ maxLength: 200 }) }),
  getLinkResponse: t.Object({ linkUrl: t.String(), error }),
};
