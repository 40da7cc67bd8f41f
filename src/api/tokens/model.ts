import { t } from "elysia";

const id = t.String({ maxLength: 64 });
const token = t.Object({ tokenId: t.String(), createTime: t.String(), name: t.String(), creatorEmail: t.String() });

export const tokensModel = {
  namespaceBody: t.Object({ namespaceId: id }),
  orgBody: t.Object({ orgId: id }),
  tokenIdBody: t.Object({ tokenId: id }),
  generated: t.Object({ token: t.String(), tokenId: t.String() }),
  list: t.Object({ tokens: t.Array(token) }),
  empty: t.Object({}),
};
