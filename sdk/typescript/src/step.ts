import type {
  ChannelKind, ChatContent, CompletedStep, ContentByKind, DigestResult, EmailContent, InAppContent,
  Links, PushContent, SendResult, SmsContent, StepAnswer, Subscriber, ThrottleResult, WebhookContent,
} from "./types.js";
import { type Duration, rfc3339, toSeconds, goQuote } from "./duration.js";
import {
  BridgeError, DuplicateStepIdError, NondeterminismError, StepError, WorkflowError, invalidStep, messageOf,
} from "./errors.js";

type Awaitable<T> = T | Promise<T>;

/** Options of a send step. */
export interface SendOptions {
  /** Send to this subscriber instead of the run's (how a scheduled run, which has none, sends). null: the run's subscriber. */
  to?: string | null;
}

/** When a delay step ends: a span (30, "30s"), an instant, or the next wall-clock time in the subscriber's time zone. */
export type DelayFor = Duration | { until: Date | string } | { localTime: string };

/** Options of a waitForEvent step. */
export interface WaitOptions {
  /** The signal's name. */
  event: string;
  /** How long to wait; null or 0: no timeout. */
  timeout?: Duration | null;
}

/** Options of a digest step: a window, or a cron schedule at which it closes (subscriber's time zone). */
export type DigestOptions =
  | { window: Duration; cron?: undefined; key?: string | null }
  | { cron: string; window?: undefined; key?: string | null };

/** Options of a throttle step. */
export interface ThrottleOptions {
  /** The runs allowed within the window, at least 1: the step reports `throttled` from the run after them. */
  limit: number;
  /** How far back the step counts: positive, at most 31 days. */
  window: Duration;
  /** Splits the counts of one workflow and subscriber: a run counts only with runs of the same key. Empty or null: none. */
  key?: string | null;
}

/** What a send step's content function receives. */
export interface StepContext {
  /**
   * The values of the step's controls, as the service resolved them for the run's locale when the run
   * started (the same on every execution of the run), each defaulting to its schema's default; `{}` for a
   * step that declares no controls.
   */
  controls: Record<string, any>;
}

/** A send step's content function. */
export type Render<C> = (ctx: StepContext) => Awaitable<C>;

/** Options of a run step. */
export interface RunOptions<T> {
  /** The output the step stands for in a preview that has no recorded output of it (the callback never runs in a preview). */
  preview?: T;
}

/** The steps of a workflow. Each has a step id, unique within the workflow, that names its recorded result. */
export interface Steps {
  /** Runs fn, the only place for I/O and the clock, and records its result (JSON). On replay it returns the recorded result without running fn. */
  run<T>(stepId: string, fn: () => Awaitable<T>, opts?: RunOptions<T>): Promise<T>;
  /** Pauses the run: for a span, until an instant, or until the next local time ("09:00"). */
  delay(stepId: string, d: DelayFor): Promise<void>;
  /** Suspends the run until a signal named `event` reaches it; resolves to its payload, or null on timeout. */
  waitForEvent<T = Record<string, unknown>>(stepId: string, opts: WaitOptions): Promise<T | null>;
  /** Has the service deliver a message of the channel kind; the content type follows the kind. */
  send<K extends ChannelKind>(stepId: string, channel: K, render: Render<ContentByKind[K]>, opts?: SendOptions): Promise<SendResult>;
  email(stepId: string, render: Render<EmailContent>, opts?: SendOptions): Promise<SendResult>;
  sms(stepId: string, render: Render<SmsContent>, opts?: SendOptions): Promise<SendResult>;
  chat(stepId: string, render: Render<ChatContent>, opts?: SendOptions): Promise<SendResult>;
  push(stepId: string, render: Render<PushContent>, opts?: SendOptions): Promise<SendResult>;
  inApp(stepId: string, render: Render<InAppContent>, opts?: SendOptions): Promise<SendResult>;
  webhook(stepId: string, render: Render<WebhookContent>, opts?: SendOptions): Promise<SendResult>;
  /** Gathers this workflow's runs for the subscriber (and key) that reach it within the window; joined runs end there as digested. */
  digest<P = Record<string, unknown>>(stepId: string, opts: DigestOptions): Promise<DigestResult<P>>;
  /** Counts the runs of this workflow for the subscriber (and key) that reached it within the window; the run goes on either way. */
  throttle(stepId: string, opts: ThrottleOptions): Promise<ThrottleResult>;
}

/** What a workflow function sees of one execution. */
export interface WorkflowContext<P> {
  step: Steps;
  payload: P;
  /** The run's recipient as of its start; null for a scheduled run. */
  subscriber: Subscriber | null;
  workflowId: string;
  runId: string;
  /** Unsubscribe and preference page URLs to put in messages; null when the service has no public URL. */
  links: Links | null;
  /** The locale the run's controls were resolved for ("fr-CA"); "" when the service named none. */
  locale: string;
}

/** Thrown by a step that ends the execution: the workflow function should let it propagate. */
export class Suspended extends Error {
  constructor() {
    super("bridge: workflow suspended at this step");
    this.name = "Suspended";
  }
}

const LOCAL_TIME = /^([01][0-9]|2[0-3]):[0-5][0-9]$/;

// The longest throttle window the service counts over, in seconds.
const MAX_THROTTLE_WINDOW = 31 * 24 * 3600;

/**
 * Execution is one call of a workflow function against a run's history: it
 * replays the recorded steps and stops at the first one that is not.
 */
export class Execution {
  private calls = 0;
  private readonly seen = new Set<string>();
  private inStep = false;
  private readonly started: Promise<unknown>[] = [];
  next: StepAnswer | undefined;
  err: BridgeError | undefined;

  /** In a preview, the run step that had neither a recorded output nor a sample. */
  needs: string | undefined;

  constructor(
    private readonly history: CompletedStep[],
    private readonly replayOnly = false,
    private readonly controls: Record<string, Record<string, unknown>> = {},
    /** In a preview, the step previewed: steps before it past the history run no body. */
    private readonly previewStep = "",
  ) {}

  /** run calls fn and turns what happened into the answer, or throws the failure. */
  async run(fn: () => Promise<void> | void): Promise<
    { status: "completed" } | { status: "step"; step: StepAnswer } | { status: "preview_needs"; stepId: string }
  > {
    let fnErr: unknown;
    let threw = false;
    try {
      await fn();
    } catch (e) {
      threw = true;
      fnErr = e;
    }
    // A step whose promise the function did not await is still running.
    for (let settled = 0; settled < this.started.length; ) {
      const n = this.started.length;
      await Promise.allSettled(this.started.slice(settled));
      settled = n;
    }
    if (this.needs !== undefined) return { status: "preview_needs", stepId: this.needs };
    if (this.next) return { status: "step", step: this.next };
    if (this.err) throw this.err;
    if (threw) throw new WorkflowError(messageOf(fnErr));
    if (this.calls < this.history.length) {
      const rec = this.history[this.calls]!;
      throw new NondeterminismError(this.calls + 1, { stepId: rec.stepId, type: rec.type }, null);
    }
    return { status: "completed" };
  }

  /** steps is the step API bound to this execution. */
  steps(): Steps {
    const x = this;
    const send = (stepId: string, channel: string, render: unknown, opts?: SendOptions) =>
      x.guard(x.send(stepId, channel, render, opts));
    return {
      run: (id, fn, opts) => x.guard(x.runStep(id, fn, opts)),
      delay: (id, d) => x.guard(x.delay(id, d)),
      waitForEvent: (id, opts) => x.guard(x.waitForEvent(id, opts)) as Promise<any>,
      send: (id, channel, render, opts) => send(id, channel, render, opts),
      email: (id, render, opts) => send(id, "email", render, opts),
      sms: (id, render, opts) => send(id, "sms", render, opts),
      chat: (id, render, opts) => send(id, "chat", render, opts),
      push: (id, render, opts) => send(id, "push", render, opts),
      inApp: (id, render, opts) => send(id, "in_app", render, opts),
      webhook: (id, render, opts) => send(id, "webhook", render, opts),
      digest: (id, opts) => x.guard(x.digest(id, opts)) as Promise<any>,
      throttle: (id, opts) => x.guard(x.throttle(id, opts)),
    };
  }

  // guard marks a step's promise handled, so that a workflow that does not
  // await a step cannot crash the process with an unhandled rejection; the
  // promise still rejects for whoever awaits it.
  private guard<T>(p: Promise<T>): Promise<T> {
    p.catch(() => {});
    this.started.push(p);
    return p;
  }

  /**
   * begin accounts for a step call, synchronously at the call: the recorded
   * step when the call replays one, undefined when it is the next step, or
   * the failure that ends the execution (thrown).
   */
  private begin(stepId: string, type: string, sample?: { value: unknown }): CompletedStep | undefined {
    if (this.next || this.needs !== undefined) throw new Suspended();
    if (this.err) throw this.err;
    if (this.inStep) throw this.invalid(stepId, "called inside another step's callback");
    if (typeof stepId !== "string" || stepId === "") throw this.invalid("", "empty step id");
    if (this.seen.has(stepId)) throw this.fail(new DuplicateStepIdError(stepId));
    this.seen.add(stepId);
    const i = this.calls++;
    if (i >= this.history.length) {
      if (this.replayOnly) throw this.answer({ stepId, type });
      if (this.previewStep !== "") return this.previewed(stepId, type, sample);
      return undefined;
    }
    const rec = this.history[i]!;
    if (rec.stepId !== stepId || rec.type !== type) {
      throw this.fail(new NondeterminismError(i + 1, { stepId: rec.stepId, type: rec.type }, { stepId, type }));
    }
    return rec;
  }

  // previewed is a preview's step past the history: the previewed step runs
  // (undefined) unless it is a run step, which has no content; a step before
  // it returns a stand-in output without running its body.
  private previewed(stepId: string, type: string, sample?: { value: unknown }): CompletedStep | undefined {
    if (stepId === this.previewStep) {
      if (type === "run") {
        throw this.fail(new BridgeError(400, "invalid_request",
          `bridge: invalid request: step ${goQuote(stepId)} is a run step: it has no content to preview`));
      }
      return undefined;
    }
    const outputs: Record<string, unknown> = {
      send: { attemptId: "preview", status: "sent" },
      digest: { count: 1, events: [] },
      throttle: { throttled: false, count: 1 },
    };
    if (type === "run") {
      if (!sample) {
        this.needs = stepId;
        throw new Suspended();
      }
      return { stepId, type, output: sample.value };
    }
    return { stepId, type, output: outputs[type] ?? null };
  }

  private answer(step: StepAnswer): Suspended {
    this.next = step;
    return new Suspended();
  }

  private fail<E extends BridgeError>(err: E): E {
    this.err = err;
    return err;
  }

  private invalid(stepId: string, problem: string): StepError {
    return this.fail(invalidStep(stepId, problem));
  }

  // callback runs tenant code of a step: a step called from inside it is
  // refused, and a failure ends the execution.
  private async callback<T>(stepId: string, f: () => Awaitable<T>): Promise<T> {
    this.inStep = true;
    let v: T | undefined;
    let failure: unknown;
    let threw = false;
    try {
      v = await f();
    } catch (e) {
      threw = true;
      failure = e;
    }
    this.inStep = false;
    if (this.err) throw this.err; // f called a step, which failed the execution
    if (threw) throw this.fail(new StepError(stepId, messageOf(failure)));
    return v as T;
  }

  private async runStep<T>(stepId: string, fn: () => Awaitable<T>, opts?: RunOptions<T>): Promise<T> {
    let sample: { value: unknown } | undefined;
    if (opts && opts.preview !== undefined) {
      try {
        const s = JSON.stringify(opts.preview);
        if (s !== undefined) sample = { value: JSON.parse(s) };
      } catch {
        sample = undefined; // a sample that does not encode declares none, as in Go
      }
    }
    const rec = this.begin(stepId, "run", sample);
    if (rec) return rec.output as T;
    if (typeof fn !== "function") throw this.invalid(stepId, "nil callback");
    const v = await this.callback(stepId, fn);
    throw this.answer({ stepId, type: "run", output: this.encode(stepId, v, "output") });
  }

  private async send(stepId: string, channel: string, render: unknown, opts?: SendOptions): Promise<SendResult> {
    const rec = this.begin(stepId, "send");
    if (rec) return rec.output as SendResult;
    const to = opts?.to ?? null;
    if (typeof channel !== "string" || channel === "") throw this.invalid(stepId, "empty channel kind");
    if (typeof render !== "function") throw this.invalid(stepId, "nil render function");
    if (to !== null && (typeof to !== "string" || to === "")) throw this.invalid(stepId, "empty recipient in To");
    const controls = { ...(this.controls[stepId] ?? {}) };
    const content = await this.callback(stepId, () => (render as Render<unknown>)({ controls }));
    throw this.answer({ stepId, type: "send", channel, to, content: this.encode(stepId, content, "content") });
  }

  private async delay(stepId: string, d: DelayFor): Promise<void> {
    if (this.begin(stepId, "delay")) return;
    if (d !== null && typeof d === "object" && "localTime" in d) {
      if (typeof d.localTime !== "string" || !LOCAL_TIME.test(d.localTime)) {
        throw this.invalid(stepId, `local time ${goQuote(String(d.localTime))} is not HH:MM, 00:00 to 23:59`);
      }
      throw this.answer({ stepId, type: "delay", until: { localTime: d.localTime } });
    }
    if (d !== null && typeof d === "object" && "until" in d) {
      const t = d.until instanceof Date ? d.until : typeof d.until === "string" ? new Date(d.until) : new Date(NaN);
      const year = t.getUTCFullYear();
      if (Number.isNaN(t.getTime()) || year < 1 || year > 9999) {
        throw this.invalid(stepId, "zero time, or a time outside the years 1 to 9999");
      }
      throw this.answer({ stepId, type: "delay", until: rfc3339(t) });
    }
    if (typeof d === "number" && d < 0) throw this.invalid(stepId, "negative delay");
    const seconds = toSeconds(d as Duration);
    if (seconds === undefined) throw this.invalid(stepId, "invalid duration " + goQuote(String(d)));
    throw this.answer({ stepId, type: "delay", seconds });
  }

  private async waitForEvent(stepId: string, opts: WaitOptions): Promise<unknown> {
    const rec = this.begin(stepId, "waitForEvent");
    if (rec) return rec.output ?? null;
    const event = opts?.event;
    if (typeof event !== "string" || event === "") throw this.invalid(stepId, "empty event name");
    let timeout: number | null = null;
    if (opts.timeout != null) {
      if (typeof opts.timeout === "number" && opts.timeout < 0) throw this.invalid(stepId, "negative timeout");
      const s = toSeconds(opts.timeout);
      if (s === undefined) throw this.invalid(stepId, "invalid duration " + goQuote(String(opts.timeout)));
      if (s > 0) timeout = s;
    }
    throw this.answer({ stepId, type: "waitForEvent", event, timeout });
  }

  private async digest(stepId: string, opts: DigestOptions): Promise<unknown> {
    const rec = this.begin(stepId, "digest");
    if (rec) return rec.output;
    const key = opts?.key || null;
    if (opts?.cron !== undefined && opts?.window !== undefined) {
      throw this.invalid(stepId, "a cron digest takes no window");
    }
    if (opts?.cron !== undefined) {
      if (typeof opts.cron !== "string" || opts.cron.trim() === "") throw this.invalid(stepId, "empty cron");
      throw this.answer({ stepId, type: "digest", cron: opts.cron, key });
    }
    const window = this.positive(stepId, opts?.window);
    throw this.answer({ stepId, type: "digest", window, key });
  }

  private async throttle(stepId: string, opts: ThrottleOptions): Promise<ThrottleResult> {
    const rec = this.begin(stepId, "throttle");
    if (rec) return rec.output as ThrottleResult;
    const limit = opts?.limit;
    if (typeof limit !== "number" || !Number.isSafeInteger(limit)) throw this.invalid(stepId, "limit must be an integer");
    if (limit < 1) throw this.invalid(stepId, "limit must be at least 1");
    const s = opts.window === undefined ? undefined : toSeconds(opts.window);
    if (s === undefined && typeof opts.window === "string") throw this.invalid(stepId, "invalid duration " + goQuote(opts.window));
    if (s === undefined || s <= 0 || s > MAX_THROTTLE_WINDOW) {
      throw this.invalid(stepId, "window must be positive and at most 31 days");
    }
    const window = s;
    throw this.answer({ stepId, type: "throttle", limit, window, key: opts.key || null });
  }

  // positive is a window in seconds, which must be positive.
  private positive(stepId: string, d: Duration | undefined): number {
    const s = d === undefined ? undefined : toSeconds(d);
    if (s === undefined && typeof d === "string") throw this.invalid(stepId, "invalid duration " + goQuote(d));
    if (s === undefined || s <= 0) throw this.invalid(stepId, "window must be positive");
    return s;
  }

  // encode checks that v encodes as JSON and returns it as the JSON value
  // the answer carries (undefined as null).
  private encode(stepId: string, v: unknown, what: string): unknown {
    try {
      const s = JSON.stringify(v);
      return s === undefined ? null : JSON.parse(s);
    } catch (e) {
      throw this.fail(new StepError(stepId, `${what} does not encode as JSON: ${messageOf(e)}`));
    }
  }
}
