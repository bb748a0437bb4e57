// Topics: each with its name and subscriber count.

import { paged, show } from "../dom.js";

export async function topicsPage() {
  const list = paged("/v1/topics", ["Topic", "Name", "Subscribers"], (t) => [t.key, t.name || "", t.subscriberCount ?? ""]);
  show("Topics", list);
  await list.reload();
}
