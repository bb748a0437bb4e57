import type { ChannelKind, JsonValue } from "./types.js";
import type { WorkflowContext } from "./step.js";
import { goQuote } from "./duration.js";

/** Options of a workflow, declared to the service when it syncs (discover). */
export interface WorkflowOptions {
  /** A JSON Schema of the trigger payload; the service checks triggers against it. */
  payloadSchema?: { [key: string]: JsonValue } | null;
  /** Critical: its sends go out whatever the subscriber's preferences say, and carry no unsubscribe link. */
  critical?: boolean;
  /** Default preferences: per channel kind, whether a subscriber who chose nothing receives this workflow's sends of it. */
  channels?: Partial<Record<ChannelKind, boolean>>;
  /** A cron expression: the service starts a run (with no subscriber) on each tick. null: triggered by events. */
  schedule?: string | null;
  /**
   * A display name, shown to subscribers on the preference page and to the tenant in GET /v1/workflows
   * instead of the id ("Weekly digest" for weekly_digest): at most 100 characters, no control characters.
   */
  name?: string;
  /** A sentence saying what the workflow sends, shown under its name: at most 500 characters, one line. */
  description?: string;
  /**
   * The controls of each step, by step id: a JSON Schema of `type: "object"` whose every property has a
   * `default`. Teammates edit the values through the service, per locale; a send step's content function
   * receives the values the run resolved as `({ controls })`.
   */
  controls?: Record<string, { [key: string]: JsonValue }>;
}

/** Bounds of a workflow's display text, in characters (Unicode code points); the service refuses a sync with longer ones. */
export const MAX_WORKFLOW_NAME = 100;
export const MAX_WORKFLOW_DESCRIPTION = 500;

/** The workflow function: it runs from the top on every call the service makes for the run. */
export type WorkflowFunction<P> = (ctx: WorkflowContext<P>) => Promise<void> | void;

/** A workflow definition made by {@link workflow}: immutable, served by {@link serve} or {@link createHandler}. */
export interface Workflow<P = Record<string, unknown>> {
  readonly id: string;
  readonly fn: WorkflowFunction<P>;
  readonly options: Readonly<WorkflowOptions>;
}

/** A workflow as discover describes it. */
export interface WorkflowInfo {
  workflowId: string;
  schedule: string | null;
  payloadSchema: JsonValue;
  critical?: true;
  preferences?: { channels: Record<string, boolean> };
  name?: string;
  description?: string;
  controls?: Record<string, JsonValue>;
}

const ID_PATTERN = /^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$/;

/**
 * workflow defines a workflow. `id` is the workflowId that triggers name:
 * letters, digits and underscores, not starting with a digit. `fn` must be
 * deterministic: do I/O and read the clock only inside steps. `Payload`
 * types the trigger payload the function receives.
 *
 * It throws when the id is invalid, fn is not a function, the name or the
 * description is too long or holds a control character, or the payload
 * schema is not a JSON object.
 */
export function workflow<Payload = Record<string, unknown>>(
  id: string, fn: WorkflowFunction<Payload>, options: WorkflowOptions = {},
): Workflow<Payload> {
  if (typeof id !== "string" || !ID_PATTERN.test(id)) {
    throw new Error("bridge: invalid workflow id: " + goQuote(String(id)));
  }
  if (typeof fn !== "function") {
    throw new Error(`bridge: invalid workflow: ${goQuote(id)} has a nil function`);
  }
  for (const [what, v, max] of [
    ["name", options.name, MAX_WORKFLOW_NAME],
    ["description", options.description, MAX_WORKFLOW_DESCRIPTION],
  ] as const) {
    if (v !== undefined && !isText(v, max)) {
      throw new Error(`bridge: invalid workflow: the ${what} of ${goQuote(id)} is not text of at most ${max} characters without control characters`);
    }
  }
  const schema = options.payloadSchema;
  if (schema != null && (typeof schema !== "object" || Array.isArray(schema))) {
    throw new Error(`bridge: invalid workflow: payload schema of ${goQuote(id)} is not a JSON object`);
  }
  if (schema != null) {
    try {
      JSON.stringify(schema);
    } catch {
      throw new Error(`bridge: invalid workflow: payload schema of ${goQuote(id)} is not a JSON object`);
    }
  }
  const controls: Record<string, { [key: string]: JsonValue }> = {};
  for (const [stepId, schema] of Object.entries(options.controls ?? {})) {
    const problem = stepId === "" ? "empty step id" : controlSchemaProblem(schema);
    if (problem) throw new Error(`bridge: invalid workflow: the controls of step ${goQuote(stepId)} of ${goQuote(id)}: ${problem}`);
    controls[stepId] = JSON.parse(JSON.stringify(schema));
  }
  const opts: WorkflowOptions = {
    payloadSchema: schema ?? null,
    critical: options.critical === true,
    channels: { ...(options.channels ?? {}) },
    schedule: options.schedule || null,
    name: options.name ?? "",
    description: options.description ?? "",
    controls,
  };
  return Object.freeze({ id, fn, options: Object.freeze(opts) });
}

/** infoOf describes a workflow for discover, as the Go SDK does. */
export function infoOf(w: Workflow<any>): WorkflowInfo {
  const info: WorkflowInfo = {
    workflowId: w.id,
    schedule: w.options.schedule ?? null,
    payloadSchema: (w.options.payloadSchema ?? null) as JsonValue,
  };
  if (w.options.critical) info.critical = true;
  if (w.options.name) info.name = w.options.name;
  if (w.options.description) info.description = w.options.description;
  if (Object.keys(w.options.controls ?? {}).length > 0) info.controls = { ...w.options.controls } as Record<string, JsonValue>;
  const channels = Object.entries(w.options.channels ?? {}).filter(([, v]) => typeof v === "boolean");
  if (channels.length > 0) info.preferences = { channels: Object.fromEntries(channels) as Record<string, boolean> };
  return info;
}

// controlSchemaProblem says what is wrong with a step's control schema, as
// the Go SDK does: a JSON object of type object whose properties each have
// a default.
function controlSchemaProblem(schema: unknown): string | undefined {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return "the schema is not a JSON object";
  try {
    JSON.stringify(schema);
  } catch {
    return "the schema is not a JSON object";
  }
  const s = schema as Record<string, unknown>;
  if (s.type !== "object") return 'the schema is not of "type": "object"';
  const props = s.properties ?? {};
  if (typeof props !== "object" || props === null || Array.isArray(props)) return "the schema's properties are not an object";
  for (const [name, p] of Object.entries(props as Record<string, unknown>)) {
    if (typeof p !== "object" || p === null || Array.isArray(p)) return `property ${goQuote(name)} is not a schema object`;
    if (!("default" in p)) return `property ${goQuote(name)} has no default`;
  }
  return undefined;
}

/** controlDefaults are the defaults of a step's control schema. */
export function controlDefaults(schema: JsonValue | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const props = (schema as any)?.properties ?? {};
  for (const [name, p] of Object.entries(props as Record<string, any>)) out[name] = p?.default;
  return out;
}

// isText: a string of at most max code points, none a control character
// (C0, DEL, C1: what Go's unicode.IsControl reports) or a lone surrogate
// (text that is not valid Unicode, as Go refuses invalid UTF-8).
function isText(v: unknown, max: number): boolean {
  if (typeof v !== "string") return false;
  let n = 0;
  for (const c of v) {
    // A lone surrogate comes out of the iteration as itself.
    const cp = c.codePointAt(0)!;
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xd800 && cp <= 0xdfff) || ++n > max) return false;
  }
  return true;
}

/** registry indexes workflows by id, refusing a duplicate id. */
export function registry(workflows: readonly Workflow<any>[]): Map<string, Workflow<any>> {
  const byId = new Map<string, Workflow<any>>();
  for (const w of workflows) {
    if (!w || typeof w.fn !== "function") throw new Error("bridge: invalid workflow: nil workflow");
    if (byId.has(w.id)) throw new Error("bridge: duplicate workflow id: " + goQuote(w.id));
    byId.set(w.id, w);
  }
  return byId;
}
