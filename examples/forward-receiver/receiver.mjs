// A team's own service behind a hookinbox forward route, in Node with no
// dependency: it verifies each document's Standard Webhooks signature,
// applies each operation once by its Idempotency-Key (hookinbox resends a
// document whose outcome it could not know, with the same key), and
// answers 2xx when the operation is applied (or was already). It takes
// both shapes of document: one event's, and a coalescing route's
// (--coalesce), whose `coalesced` lists every event it covers, in order,
// and whose `current` is the resource's latest state: apply `current` once,
// under the document's key, and the covered events are applied with it.
//
//   FORWARD_SECRET=whsec_… PORT=9300 node receiver.mjs
//
// Each applied operation is printed as one JSON line on stdout.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const secret = process.env.FORWARD_SECRET ?? "";
if (!secret.startsWith("whsec_")) {
  console.error("FORWARD_SECRET must be the route's whsec_… secret");
  process.exit(2);
}
const key = Buffer.from(secret.slice("whsec_".length), "base64");
const tolerance = 5 * 60; // seconds, as the Standard Webhooks libraries

// verify checks webhook-signature over "id.timestamp.body" (Standard
// Webhooks v1: HMAC-SHA256, base64), and the timestamp's freshness.
function verify(headers, body) {
  const id = headers["webhook-id"], ts = headers["webhook-timestamp"], sigs = headers["webhook-signature"];
  if (!id || !ts || !sigs) return false;
  if (Math.abs(Date.now() / 1000 - Number(ts)) > tolerance) return false;
  const want = createHmac("sha256", key).update(`${id}.${ts}.`).update(body).digest();
  return sigs.split(" ").some((s) => {
    const [version, b64] = s.split(",");
    const got = Buffer.from(b64 ?? "", "base64");
    return version === "v1" && got.length === want.length && timingSafeEqual(got, want);
  });
}

// applied holds the operation keys already applied. A real service keeps
// them in its own database, in the transaction of the effect.
const applied = new Set();

createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    if (req.method !== "POST" || !verify(req.headers, body)) {
      res.writeHead(401).end("bad signature\n");
      return;
    }
    const doc = JSON.parse(body.toString("utf8"));
    const opKey = req.headers["idempotency-key"];
    if (applied.has(opKey)) {
      res.writeHead(200).end("already applied\n");
      return;
    }
    applied.add(opKey); // apply the operation here: doc.current (or doc.payload without --fetch-current)
    // A coalesced document covers several events (the last is doc.event_key's);
    // one event's document covers that event alone.
    const covered = Array.isArray(doc.coalesced) ? doc.coalesced.map((c) => c.event_key) : [doc.event_key];
    console.log(JSON.stringify({ operation_key: opKey, event_key: doc.event_key, route: doc.route, event_type: doc.event_type,
      resource: doc.resource, workspace: doc.workspace, has_current: doc.current !== undefined, covers: covered }));
    res.writeHead(200).end("applied\n");
  });
}).listen(Number(process.env.PORT ?? 9300), "127.0.0.1", function () {
  console.error(`listening on http://127.0.0.1:${this.address().port}`);
});
