/**
 * An OpenAI-compatible tool-calling loop in which one tool needs a person's approval before it runs
 * (docs/client.md#guarding-a-tool-with-an-approval). Plain `fetch` to any chat-completions API; Remit
 * holds the decision. Tested against a local fake model server by packages/client/test/approvals.test.ts.
 */
import { requireApproval, type RemitClient } from '../src/index.ts';

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
            result = await tool.run(approved);
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
