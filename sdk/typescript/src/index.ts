/**
 * @heraldhq/bridge: a Herald Bridge in TypeScript. Herald holds the durable
 * state of every run and calls the Bridge, signed, each time a run must
 * advance; the Bridge runs the workflow function from the top, replaying
 * the steps already recorded, until it reaches the next one.
 *
 * @packageDocumentation
 */
export { workflow, MAX_WORKFLOW_NAME, MAX_WORKFLOW_DESCRIPTION } from "./workflow.js";
export type { Workflow, WorkflowFunction, WorkflowInfo, WorkflowOptions } from "./workflow.js";
export { createHandler, nodeListener, serve, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_REPLAY_ENTRIES } from "./handler.js";
export type { BridgeOptions, ServeOptions } from "./handler.js";
export { replay } from "./replay.js";
export type { ReplayResult } from "./replay.js";
export {
  BridgeError, DuplicateStepIdError, NondeterminismError, StepError, WorkflowError,
} from "./errors.js";
export type { StepRef } from "./errors.js";
export { sign, verify, HEADER_SIGNATURE, HEADER_TIMESTAMP, DEFAULT_TOLERANCE_SECONDS } from "./sign.js";
export { parseDuration } from "./duration.js";
export type { Duration } from "./duration.js";
export type {
  DelayFor, DigestOptions, Render, RunOptions, SendOptions, StepContext, Steps, ThrottleOptions, WaitOptions, WorkflowContext,
} from "./step.js";
export type * from "./types.js";
