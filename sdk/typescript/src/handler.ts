import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { BridgeError } from "./errors.js";
import { goQuote } from "./duration.js";
import { DEFAULT_TOLERANCE_SECONDS, HEADER_SIGNATURE, HEADER_TIMESTAMP, verify } from "./sign.js";
import { Execution } from "./step.js";
import type { CompletedStep, Links, Subscriber } from "./types.js";
import { controlDefaults, infoOf, registry, type Workflow } from "./workflow.js";

/** The request body limit when {@link BridgeOptions.maxBodyBytes} is not set. */
export const DEFAULT_MAX_BODY_BYTES = 10 << 20;
/** How many signatures a handler remembers to refuse replays when {@link BridgeOptions.maxReplayEntries} is not set. */
export const DEFAULT_MAX_REPLAY_ENTRIES = 100_000;

/** Options of {@link createHandler} and {@link serve}. */
export interface BridgeOptions {
  /** The workflows served, listed by discover in this order. */
  workflows: readonly Workflow<any>[];
  /** The signing secret exactly as PUT /v1/bridge returned it. Without one every request is refused with 401. */
  signingSecret: string;
  /** Further secrets accepted too, for the time a rotation takes to reach every instance. */
  signingSecrets?: readonly string[];
  /** How far a request's timestamp may be from the clock, in seconds, either way. Default 300. */
  toleranceSeconds?: number;
  /** The clock timestamps are checked against (tests). Default: Date.now. */
  now?: () => Date | number;
  /** Request body limit in bytes; a larger body is refused with 413. Default 10 MiB. */
  maxBodyBytes?: number;
  /** Signatures remembered to refuse a replayed request with 409; negative: not checked. Default 100,000. */
  maxReplayEntries?: number;
}

/** An answer: its status and JSON body. */
export interface Answer {
  status: number;
  body: unknown;
}

/** Core is the protocol side of a Bridge, independent of the HTTP server. */
export class Core {
  private readonly byId: Map<string, Workflow<any>>;
  private readonly secrets: string[];
  private readonly replays: Replays | undefined;
  readonly maxBodyBytes: number;

  constructor(private readonly opts: BridgeOptions) {
    this.byId = registry(opts.workflows ?? []);
    this.secrets = [opts.signingSecret, ...(opts.signingSecrets ?? [])].filter((s) => typeof s === "string" && s !== "");
    this.maxBodyBytes = opts.maxBodyBytes && opts.maxBodyBytes > 0 ? opts.maxBodyBytes : DEFAULT_MAX_BODY_BYTES;
    const max = opts.maxReplayEntries ?? 0;
    if (max >= 0) this.replays = new Replays(max === 0 ? DEFAULT_MAX_REPLAY_ENTRIES : max);
  }

  /** handle answers one request: its raw body and a reader of its headers. */
  async handle(body: Uint8Array, header: (name: string) => string | null | undefined): Promise<Answer> {
    try {
      return { status: 200, body: await this.answer(body, header) };
    } catch (e) {
      const err = e instanceof BridgeError ? e : new BridgeError(500, "internal", e instanceof Error ? e.message : String(e));
      const info: Record<string, string> = { code: err.code, message: err.message };
      if (err.stepId !== undefined && err.stepId !== "") info.stepId = err.stepId;
      return { status: err.status, body: { error: info } };
    }
  }

  tooLarge(): Answer {
    return { status: 413, body: { error: { code: "body_too_large", message: `bridge: request body too large: over ${this.maxBodyBytes} bytes` } } };
  }

  private async answer(body: Uint8Array, header: (name: string) => string | null | undefined): Promise<unknown> {
    const signature = header(HEADER_SIGNATURE) ?? null;
    const now = this.opts.now ? this.opts.now() : Date.now();
    const nowSeconds = Math.floor((now instanceof Date ? now.getTime() : now) / 1000);
    verify(body, header(HEADER_TIMESTAMP) ?? null, signature, nowSeconds,
      this.opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS, this.secrets);
    if (this.replays && !this.replays.first(signature!)) {
      throw new BridgeError(409, "replayed", "bridge: replayed request");
    }
    const req = parseRequest(body);
    switch (req.action) {
      case "health":
        return { status: "ok", workflows: this.byId.size };
      case "discover":
        return { workflows: [...this.byId.values()].map(infoOf) };
      case "execute":
      case "preview": {
        const w = this.byId.get(req.workflowId);
        if (!w) throw new BridgeError(404, "workflow_not_found", "bridge: workflow not found: " + goQuote(req.workflowId));
        if (req.action === "preview" && req.stepId === "") throw invalidRequest("a preview names no stepId");
        return execute(w, req, false);
      }
      case "check": {
        // The recorded steps replay and no step body runs: the step past
        // them is named by id and type only.
        const w = this.byId.get(req.workflowId);
        if (!w) throw new BridgeError(404, "workflow_not_found", "bridge: workflow not found: " + goQuote(req.workflowId));
        const a = await execute(w, req, true);
        if (a.status === "completed") return { status: "completed" };
        // A check previews no step, so it never needs a preview sample.
        if (a.status === "preview_needs") throw new BridgeError(500, "internal", "bridge: a check asked for a preview sample");
        return { status: "step", step: { stepId: a.step.stepId, type: a.step.type } };
      }
      case "":
        throw new BridgeError(400, "unknown_action", "bridge: unknown action: no action");
    }
    throw new BridgeError(400, "unknown_action", "bridge: unknown action: " + goQuote(req.action));
  }
}

/** A request as decoded, with the fields of execute defaulted. */
export interface ParsedRequest {
  action: string;
  workflowId: string;
  runId: string;
  payload: unknown;
  subscriber: Subscriber | null;
  steps: CompletedStep[];
  links: Links | null;
  controls: Record<string, unknown>;
  locale: string;
  /** The step a preview previews; "" in execute. */
  stepId: string;
}

const invalidJSON = (why: string) => new BridgeError(400, "invalid_json", "bridge: malformed JSON: " + why);
const invalidRequest = (why: string) => new BridgeError(400, "invalid_request", "bridge: invalid request: " + why);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** parseRequest decodes a request body, refusing what the Go SDK refuses as malformed. */
export function parseRequest(body: Uint8Array | string): ParsedRequest {
  let v: unknown;
  try {
    v = JSON.parse(typeof body === "string" ? body : new TextDecoder("utf-8", { fatal: false }).decode(body));
  } catch (e) {
    throw invalidJSON(e instanceof Error ? e.message : String(e));
  }
  if (v === null) v = {};
  if (!isObject(v)) throw invalidJSON("a request is a JSON object");
  const str = (k: string): string => {
    const x = v[k];
    if (x === undefined || x === null) return "";
    if (typeof x !== "string") throw invalidJSON(`${k} is not a string`);
    return x;
  };
  const steps = v.steps ?? [];
  if (!Array.isArray(steps)) throw invalidJSON("steps is not an array");
  for (const s of steps) {
    if (s !== null && !isObject(s)) throw invalidJSON("a step is not an object");
    for (const k of ["stepId", "type"]) {
      if (s && s[k] != null && typeof s[k] !== "string") throw invalidJSON(`${k} is not a string`);
    }
  }
  const subscriber = v.subscriber ?? null;
  if (subscriber !== null && !isObject(subscriber)) throw invalidJSON("subscriber is not an object");
  const links = v.links ?? null;
  if (links !== null && !isObject(links)) throw invalidJSON("links is not an object");
  const controls = v.controls ?? {};
  if (!isObject(controls)) throw invalidJSON("controls is not an object");
  return {
    action: str("action"),
    workflowId: str("workflowId"),
    runId: str("runId"),
    payload: v.payload,
    subscriber: subscriber as Subscriber | null,
    steps: steps.map((s: any) => ({ stepId: s?.stepId ?? "", type: s?.type ?? "", output: s?.output ?? null })),
    links: links as Links | null,
    controls,
    locale: str("locale"),
    stepId: str("stepId"),
  };
}

/** execute checks an execute request and runs workflow w against it. */
export async function execute(w: Workflow<any>, req: ParsedRequest, replayOnly: boolean) {
  let payload = req.payload;
  if (payload === undefined || payload === null) payload = {};
  if (!isObject(payload)) throw invalidRequest("payload must be a JSON object");
  const ids = new Set<string>();
  req.steps.forEach((s, i) => {
    if (s.stepId === "") throw invalidRequest(`steps[${i}] has no stepId`);
    if (ids.has(s.stepId)) throw invalidRequest(`steps lists ${goQuote(s.stepId)} twice`);
    ids.add(s.stepId);
  });
  // Each declared step's controls: the schema's defaults, overlaid with the values the request carries.
  const controls: Record<string, Record<string, unknown>> = {};
  for (const [stepId, schema] of Object.entries(w.options.controls ?? {})) {
    const sent = req.controls[stepId] ?? null;
    if (sent !== null && !isObject(sent)) {
      throw invalidRequest(`the controls of step ${goQuote(stepId)} are not a JSON object`);
    }
    controls[stepId] = { ...controlDefaults(schema), ...(sent ?? {}) };
  }
  const x = new Execution(req.steps, replayOnly, controls, req.action === "preview" ? req.stepId : "");
  const ctx = {
    step: x.steps(),
    payload,
    subscriber: req.subscriber,
    workflowId: req.workflowId || w.id,
    runId: req.runId,
    links: req.links,
    locale: req.locale,
  };
  return x.run(() => w.fn(ctx));
}

// Replays remembers the signatures of accepted requests, to refuse a second
// request with the same signature inside the tolerance window, at most max
// of them, forgetting the oldest first.
class Replays {
  private readonly seen = new Set<string>();
  private readonly ring: string[] = [];
  private next = 0;
  constructor(private readonly max: number) {}

  first(signature: string): boolean {
    if (!/^[0-9a-f]{64}$/.test(signature)) return true;
    if (this.seen.has(signature)) return false;
    this.seen.add(signature);
    if (this.ring.length < this.max) {
      this.ring.push(signature);
      return true;
    }
    this.seen.delete(this.ring[this.next]!);
    this.ring[this.next] = signature;
    this.next = (this.next + 1) % this.max;
    return true;
  }
}

function encodeAnswer(a: Answer): string {
  return JSON.stringify(a.body) + "\n";
}

const HEADERS = { "content-type": "application/json", "x-content-type-options": "nosniff" };

/**
 * createHandler returns a Bridge as a fetch-API handler, (Request) =>
 * Promise<Response>: for Next.js route handlers, Hono, Deno, Bun, workers,
 * or any framework that speaks Request and Response. Mount it on one route;
 * it accepts every method.
 */
export function createHandler(opts: BridgeOptions): (request: Request) => Promise<Response> {
  const core = new Core(opts);
  return async (request: Request): Promise<Response> => {
    const declared = Number(request.headers.get("content-length") ?? "0");
    let answer: Answer;
    if (declared > core.maxBodyBytes) {
      answer = core.tooLarge();
    } else {
      const body = new Uint8Array(await request.arrayBuffer());
      answer = body.byteLength > core.maxBodyBytes ? core.tooLarge() : await core.handle(body, (n) => request.headers.get(n));
    }
    return new Response(encodeAnswer(answer), { status: answer.status, headers: HEADERS });
  };
}

/** Options of {@link serve}: the Bridge's, and where it listens. */
export interface ServeOptions extends BridgeOptions {
  /** TCP port; default 4000 (0 picks a free one). */
  port?: number;
  /** Interface to listen on; default: every interface, as Node's http does. */
  host?: string;
  /** The one path served (e.g. "/api/herald"); other paths answer 404. Default: every path. */
  path?: string;
}

/**
 * nodeListener returns a Bridge as a Node http request listener, for an
 * existing server (Express: `app.post("/api/herald", nodeListener(opts))`
 * without a body parser in front of it: the signature is over the raw body).
 */
export function nodeListener(opts: BridgeOptions & { path?: string }): (req: IncomingMessage, res: ServerResponse) => void {
  const core = new Core(opts);
  const write = (res: ServerResponse, a: Answer) => {
    res.writeHead(a.status, HEADERS);
    res.end(encodeAnswer(a));
  };
  return (req, res) => {
    if (opts.path && (req.url ?? "/").split("?")[0] !== opts.path) {
      write(res, { status: 404, body: { error: { code: "not_found", message: "bridge: no Bridge at this path" } } });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > core.maxBodyBytes) {
        over = true;
        chunks.length = 0;
        write(res, core.tooLarge());
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      if (over) return;
      core.handle(Buffer.concat(chunks), (n) => {
        const v = req.headers[n];
        return Array.isArray(v) ? v[0] : v;
      }).then((a) => write(res, a), (e) => write(res, { status: 500, body: { error: { code: "internal", message: String(e) } } }));
    });
    req.on("error", () => res.destroy());
  };
}

/**
 * serve starts a Bridge on Node's http server and returns the server,
 * already listening (listen for its "listening" event, or read
 * server.address(), when port is 0).
 */
export function serve(opts: ServeOptions): Server {
  const server = createServer(nodeListener(opts));
  server.listen(opts.port ?? 4000, opts.host);
  return server;
}
