import { parseRequest, execute } from "./handler.js";
import type { ExecuteRequest } from "./types.js";
import type { Workflow } from "./workflow.js";

/** Where a replay that followed the whole history ended. */
export type ReplayResult =
  | { status: "completed" }
  /** The step the code asks for after the history: not run, not described. */
  | { status: "step"; step: { stepId: string; type: string } };

/**
 * replay runs workflow w against a recorded history, the body of an execute
 * request its Bridge received (as an object or as JSON text), the way the
 * Bridge would, and runs no step past the history: no run callback, no
 * render. Use it in tests to catch, before a deploy, a change that would
 * fail runs in flight.
 *
 * It resolves to where the code ended after the history, or rejects with
 * the failure the Bridge would answer: a {@link NondeterminismError} naming
 * the step's position and both sides, a DuplicateStepIdError, a StepError,
 * or a WorkflowError.
 */
export async function replay(w: Workflow<any>, executeRequestBody: ExecuteRequest | string): Promise<ReplayResult> {
  const req = parseRequest(typeof executeRequestBody === "string" ? executeRequestBody : JSON.stringify(executeRequestBody));
  if (req.action !== "" && req.action !== "execute") {
    throw new Error(`bridge: a "${req.action}" request, not an execute request`);
  }
  if (req.workflowId !== "" && req.workflowId !== w.id) {
    throw new Error(`bridge: a history of workflow "${req.workflowId}" replayed with workflow "${w.id}"`);
  }
  const answer = await execute(w, req, true);
  if (answer.status !== "step") return { status: "completed" }; // a replay is never a preview
  return { status: "step", step: { stepId: answer.step.stepId, type: answer.step.type } };
}
