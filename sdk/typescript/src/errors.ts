import { goQuote as q } from "./duration.js";

// The failures a Bridge answers with, with the same codes and messages as
// the Go SDK, so that both answer the same request the same way.

/** BridgeError is a failure the Bridge answers with an HTTP status and an error code. */
export class BridgeError extends Error {
  readonly status: number;
  readonly code: string;
  readonly stepId: string | undefined;
  constructor(status: number, code: string, message: string, stepId?: string) {
    super(message);
    this.name = "BridgeError";
    this.status = status;
    this.code = code;
    this.stepId = stepId;
  }
}

/** A step as the history records it or as the code asks for it. */
export interface StepRef {
  stepId: string;
  type: string;
}

/**
 * NondeterminismError: the workflow no longer follows the run's recorded
 * history. Its message names the step's position (from 1) and both sides:
 *
 *     nondeterministic workflow: step 2 was "send-email" (send) in the history, the code asked for "load-user" (run)
 *
 * The Bridge answers it with 422 `nondeterministic` and the service fails the run.
 */
export class NondeterminismError extends BridgeError {
  /** The step's position in the history, from 1. */
  readonly position: number;
  /** What the history recorded at that position. */
  readonly history: StepRef;
  /** What the code asked for there, or null when it returned instead. */
  readonly asked: StepRef | null;
  constructor(position: number, history: StepRef, asked: StepRef | null) {
    const code = asked
      ? `the code asked for ${q(asked.stepId)} (${asked.type})`
      : "the code returned without asking for it";
    super(422, "nondeterministic",
      `nondeterministic workflow: step ${position} was ${q(history.stepId)} (${history.type}) in the history, ${code}`);
    this.name = "NondeterminismError";
    this.position = position;
    this.history = history;
    this.asked = asked;
  }
}

/** DuplicateStepIdError: one execution called two steps with the same id (422 `duplicate_step_id`). */
export class DuplicateStepIdError extends BridgeError {
  constructor(stepId: string) {
    super(422, "duplicate_step_id", `bridge: duplicate step id: ${q(stepId)} is called twice`);
    this.name = "DuplicateStepIdError";
  }
}

/**
 * StepError: a step's callback threw, its result does not encode as JSON,
 * or the step was called with invalid arguments. The Bridge answers 500
 * with the step id: `step_failed`, which the service retries with
 * backoff, or `invalid_step` (invalid arguments), which fails the run at
 * once, as a retry would call the step alike.
 */
export class StepError extends BridgeError {
  declare readonly stepId: string;
  constructor(stepId: string, message: string, code = "step_failed") {
    super(500, code, message, stepId);
    this.name = "StepError";
  }
}

/** WorkflowError: the workflow function threw outside any step (500 `workflow_failed`). */
export class WorkflowError extends BridgeError {
  constructor(message: string) {
    super(500, "workflow_failed", message);
    this.name = "WorkflowError";
  }
}

/** invalidStep is the StepError of a step called with invalid arguments. */
export function invalidStep(stepId: string, problem: string): StepError {
  return new StepError(stepId, "bridge: invalid step: " + problem, "invalid_step");
}

/** messageOf is what a thrown value says. */
export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

