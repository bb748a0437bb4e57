import { createHmac, timingSafeEqual } from "node:crypto";
import { BridgeError } from "./errors.js";
import { goDuration, goQuote } from "./duration.js";

/** Header names of a signed Bridge request. */
export const HEADER_TIMESTAMP = "x-svc-timestamp";
export const HEADER_SIGNATURE = "x-svc-signature";

/** How far a request's timestamp may be from the Bridge's clock, in seconds, either way. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * sign returns the signature of a request: the lowercase hex HMAC-SHA256 of
 * timestamp + "." + body, keyed with the UTF-8 bytes of secret as given.
 */
export function sign(secret: string, timestamp: number | string, body: string | Uint8Array): string {
  const h = createHmac("sha256", Buffer.from(secret, "utf8"));
  h.update(String(timestamp) + ".");
  h.update(typeof body === "string" ? Buffer.from(body, "utf8") : body);
  return h.digest("hex");
}

const unauthorized = (message: string) => new BridgeError(401, "unauthorized", message);
const MAX_INT64 = 9223372036854775807n;

/**
 * verify checks a signed request against its raw body and the clock
 * (nowSeconds, unix seconds) and throws a 401 BridgeError when the
 * signature is missing, matches none of the secrets, or is stale.
 */
export function verify(body: Uint8Array, timestamp: string | null, signature: string | null,
  nowSeconds: number, toleranceSeconds: number, secrets: readonly string[]): void {
  if (!timestamp || !signature) throw unauthorized("bridge: request not signed");
  if (!/^[0-9]+$/.test(timestamp) || BigInt(timestamp) > MAX_INT64) {
    throw unauthorized("bridge: invalid signature timestamp: " + goQuote(timestamp));
  }
  const got = Buffer.from(signature, "utf8");
  let ok = false;
  for (const s of secrets) {
    if (!s) continue;
    const want = Buffer.from(sign(s, timestamp, body), "utf8");
    // keep going after a match: the time taken does not tell which secret matched
    if (want.length === got.length && timingSafeEqual(want, got)) ok = true;
  }
  if (!ok) throw unauthorized("bridge: no valid signature");
  const tolerance = toleranceSeconds > 0 ? toleranceSeconds : DEFAULT_TOLERANCE_SECONDS;
  const skew = Math.floor(nowSeconds) - Number(timestamp);
  if (skew > tolerance || skew < -tolerance) {
    throw unauthorized(`bridge: signature timestamp outside tolerance: timestamp ${timestamp} is ${goDuration(skew)} away (tolerance ${goDuration(tolerance)})`);
  }
}
