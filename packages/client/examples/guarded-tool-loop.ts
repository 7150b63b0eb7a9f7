/**
 * An OpenAI-compatible tool-calling loop in which one tool needs a person's approval before it runs
 * (docs/client.md#guarding-a-tool-with-an-approval). Plain `fetch` to any chat-completions API; Remit
 * holds the decision. The approved tool runs inside the follow-up run the approval started, which this
 * runtime claims and completes (docs/client.md#running-an-outside-agent), so the agent's run history,
 * its outcome notification and the `agent_run.completed` webhook say what was done. Tested against a
 * local fake model server by packages/client/test/approvals.test.ts.
 */
import {
  claimRun,
  findFollowUpRun,
  RemitApiError,
  requireApproval,
  workOnRun,
  type RemitClient,
} from '../src/index.ts';

export interface Tool {
  description: string;
  /** JSON Schema of the arguments, as the model sees it. */
  parameters: Record<string, unknown>;
  /** True: a person must approve (and may edit the arguments) before it runs. */
  requiresApproval: boolean;
  run(args: Record<string, unknown>): Promise<string>;
}

export interface GuardedLoopOptions {
  remit: RemitClient;
  /** The Remit agent this runtime speaks for (created once, `active`). */
  agentUid: string;
  /** e.g. `https://api.openai.com/v1`, or any OpenAI-compatible server. */
  modelBaseUrl: string;
  modelApiKey: string;
  model: string;
  tools: Record<string, Tool>;
  /** What the agent is asked to do. */
  task: string;
  /** A stable id for this piece of work: with it, a restarted loop waits for the same approvals. */
  workId: string;
  maxTurns?: number;
}

interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}
interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

async function complete(options: GuardedLoopOptions, messages: Message[]): Promise<Message> {
  const response = await fetch(`${options.modelBaseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${options.modelApiKey}` },
    body: JSON.stringify({
      model: options.model,
      messages,
      tools: Object.entries(options.tools).map(([name, tool]) => ({
        type: 'function',
        function: { name, description: tool.description, parameters: tool.parameters },
      })),
    }),
  });
  if (!response.ok) throw new Error(`The model answered ${response.status}`);
  const body = (await response.json()) as { choices: { message: Message }[] };
  return body.choices[0]!.message;
}

/**
 * Runs an approved tool inside the approval's follow-up run: claimed, then completed with the tool's
 * answer as its outcome (or failed with its error). A loop restarted for the same work finds the run
 * already completed and answers its outcome instead of acting twice; a run another process holds, or
 * one that ended otherwise (cancelled, the agent paused), is not acted on. When the agent could not
 * start a run (the approval answered a `_warning`), the tool runs without one.
 */
async function runApproved(options: GuardedLoopOptions, taskUid: string, act: () => Promise<string>) {
  const followUp = await findFollowUpRun(options.remit, taskUid);
  if (!followUp) return act();
  const { status, outcome } = followUp.attributes;
  if (status === 'completed') return String(outcome?.summary ?? 'Already done');
  if (status !== 'pending') return `Not done: the run for this action is ${status}.`;
  let claimed;
  try {
    claimed = await claimRun(options.remit, followUp.id, { runtimeId: `guarded-loop:${options.workId}` });
  } catch (error) {
    if (error instanceof RemitApiError && error.status === 409) return `Not done: ${error.message}`;
    throw error;
  }
  let answer = '';
  await workOnRun(claimed, async () => {
    answer = await act();
    return { summary: answer };
  });
  return answer;
}

/** Runs the loop to the model's final answer; a guarded tool runs only once a person approved it. */
export async function runGuardedLoop(options: GuardedLoopOptions): Promise<string> {
  const messages: Message[] = [{ role: 'user', content: options.task }];
  for (let turn = 0; turn < (options.maxTurns ?? 8); turn++) {
    const reply = await complete(options, messages);
    messages.push(reply);
    if (!reply.tool_calls?.length) return reply.content ?? '';
    for (const call of reply.tool_calls) {
      const tool = options.tools[call.function.name];
      let result: string;
      if (!tool) {
        result = `There is no tool named ${call.function.name}.`;
      } else {
        const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
        if (!tool.requiresApproval) {
          result = await tool.run(args);
        } else {
          const decision = await requireApproval(options.remit, {
            agent_uid: options.agentUid,
            title: `${call.function.name}: ${call.function.arguments}`,
            reasoning: options.task,
            tool_args: { type: call.function.name, ...args },
            trigger: { type: 'manual' },
            idempotencyKey: `${options.workId}:${call.id}`,
          });
          if (decision.approved) {
            // The person may have edited the arguments: run with theirs, never with the proposal.
            const { type: _type, ...approved } = decision.toolArgs;
            result = await runApproved(options, decision.task.uid, () => tool.run(approved));
          } else {
            result = `A person rejected this (${decision.resolution}): ${decision.note ?? 'no reason given'}. Do not retry it.`;
          }
        }
      }
      messages.push({ role: 'tool', tool_call_id: call.id, content: result });
    }
  }
  throw new Error('The model did not finish within the allowed turns');
}
