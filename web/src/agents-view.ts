/**
 * The Agents pages' pure parts (docs/console.md#agents): triggers in words, a run's duration and token
 * usage, what a run's `outcome` says it did, and the PATCH body of an edited agent (only what changed).
 */
import type { components } from '@remit/client';

export type Agent = components['schemas']['Agent'];
export type AgentRun = components['schemas']['AgentRun'];
export type RunAttributes = AgentRun['attributes'];
export type Trigger = Agent['triggers'][number];
export type Tool = Agent['tools'][number];

export const AGENT_STATUSES = ['draft', 'active', 'paused'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];
export const AGENT_TYPES = ['custom', 'collections'] as const;
export const RUN_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled', 'stopped'] as const;
export const TRIGGER_TYPES = ['manual', 'schedule', 'email_received'] as const;
export const NOTIFICATION_EVENTS = [
  'action_taken',
  'approval_required',
  'outcome',
  'error',
  'digest',
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];
export type EventSwitches = Record<NotificationEvent, boolean>;

/** The service's defaults (docs/agents.md#notifications): what an agent without settings uses. */
export const DEFAULT_SWITCHES: EventSwitches = {
  action_taken: true,
  approval_required: true,
  outcome: true,
  error: true,
  digest: false,
};

export const EVENT_LABELS: Record<NotificationEvent, string> = {
  action_taken: 'Action taken',
  approval_required: 'Approval required',
  outcome: 'Outcome',
  error: 'Error',
  digest: 'Daily digest',
};

/** The run attributes the pages read (the rest stay on the server); token usage is added for admins. */
export const RUN_FIELDS = [
  'agent_uid',
  'agent_version_uid',
  'status',
  'sandbox',
  'trigger_type',
  'started_on',
  'completed_on',
  'created_on',
  'task_uid',
  'error',
  'outcome',
] as const;

/** `fields[agent-runs]`: `token_usage` only for someone who may see it (else the API answers 403). */
export function runFields(withTokenUsage: boolean): string {
  return [...RUN_FIELDS, ...(withTokenUsage ? ['token_usage'] : [])].join(',');
}

/** A run that has not ended yet: the pages poll while one is on screen, and offer to cancel it. */
export const isRunActive = (status: string | undefined) => status === 'pending' || status === 'running';

// ---- triggers in words ----

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const NUMBER = /^\d{1,2}$/;

function dayOfWeek(field: string): number | undefined {
  if (NUMBER.test(field)) {
    const n = Number(field);
    return n <= 7 ? n % 7 : undefined;
  }
  const named = DAY_NAMES.indexOf(field.toUpperCase());
  return named >= 0 ? named : undefined;
}

function listOf(words: string[]): string {
  if (words.length <= 1) return words.join('');
  return `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
}

function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${['th', 'st', 'nd', 'rd'][n % 10] ?? 'th'}`;
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * A five-field cron expression (minute hour day month weekday, UTC) in words when it is a common
 * shape — "every day at 09:00 UTC", "every weekday at 08:30 UTC", "every 15 minutes" — else undefined
 * (the page then shows the expression itself).
 */
export function describeCron(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) return undefined;
  const [minute, hour, day, month, weekday] = fields as [string, string, string, string, string];
  if (month !== '*') return undefined;
  const everyDay = day === '*' && weekday === '*';
  if (minute === '*' && hour === '*' && everyDay) return 'every minute';
  const minuteStep = /^\*\/(\d{1,2})$/.exec(minute);
  if (minuteStep && hour === '*' && everyDay) return `every ${Number(minuteStep[1])} minutes`;
  if (!NUMBER.test(minute) || Number(minute) > 59) return undefined;
  const m = Number(minute);
  if (hour === '*' && everyDay) return `every hour at :${pad(m)}`;
  const hourStep = /^\*\/(\d{1,2})$/.exec(hour);
  if (hourStep && everyDay) return `every ${Number(hourStep[1])} hours at :${pad(m)}`;
  if (!NUMBER.test(hour) || Number(hour) > 23) return undefined;
  const at = `at ${pad(Number(hour))}:${pad(m)} UTC`;
  if (everyDay) return `every day ${at}`;
  if (day === '*') {
    if (weekday === '1-5' || weekday.toUpperCase() === 'MON-FRI') return `every weekday ${at}`;
    const days = weekday.split(',').map(dayOfWeek);
    if (days.some((d) => d === undefined)) return undefined;
    return `every ${listOf([...new Set(days as number[])].sort().map((d) => DAYS[d]!))} ${at}`;
  }
  if (weekday === '*' && NUMBER.test(day) && Number(day) >= 1 && Number(day) <= 31)
    return `on the ${ordinal(Number(day))} of every month ${at}`;
  return undefined;
}

/** One trigger in a few words: "Manual", "When an email arrives", "every day at 09:00 UTC". */
export function triggerText(trigger: Pick<Trigger, 'type' | 'cron'>): string {
  if (trigger.type === 'manual') return 'Manual';
  if (trigger.type === 'email_received') return 'When an email arrives';
  if (trigger.type === 'schedule') {
    const cron = trigger.cron ?? '';
    return describeCron(cron) ?? `Schedule: cron ${cron} (UTC)`;
  }
  return trigger.type;
}

/** A list's triggers column: each trigger in words, or what it means to have none. */
export function triggersSummary(triggers: readonly Pick<Trigger, 'type' | 'cron'>[]): string {
  if (triggers.length === 0) return 'None (runs only when started)';
  return triggers.map(triggerText).join(' · ');
}

/** What started a run, as a label: `email_received` → "Email received", `approval` → "Approval". */
export function triggerTypeLabel(type: string | undefined): string {
  switch (type) {
    case 'manual':
      return 'Manual';
    case 'schedule':
      return 'Schedule';
    case 'email_received':
      return 'Email received';
    case 'approval':
      return 'Approval';
    default:
      return type ?? '—';
  }
}

// ---- time and tokens ----

/** `45 s`, `3 min 5 s`, `1 h 2 min`: how long something took. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return seconds % 60 ? `${minutes} min ${seconds % 60} s` : `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
}

/** From start to end (or to `now` while it runs); undefined before it started. */
export function runDuration(run: RunAttributes, now: number = Date.now()): string | undefined {
  if (!run.started_on) return undefined;
  const end = run.completed_on ? Date.parse(run.completed_on) : now;
  return formatDuration(end - Date.parse(run.started_on));
}

/** An instant to the second, without the year, in the reader's time zone: `Nov 26, 9:41:05 AM`. */
export function formatRunTime(iso: string, locale?: string, timeZone?: string): string {
  return new Intl.DateTimeFormat(locale, {
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    second: '2-digit',
    timeZone,
  }).format(new Date(iso));
}

/**
 * A run's start or end beside its request time: the time alone when it is the same day there (as it
 * nearly always is), else the date too.
 */
export function formatRunInstant(iso: string, reference: string, locale?: string, timeZone?: string): string {
  const day = new Intl.DateTimeFormat(locale, { dateStyle: 'short', timeZone });
  if (day.format(new Date(iso)) !== day.format(new Date(reference)))
    return formatRunTime(iso, locale, timeZone);
  return new Intl.DateTimeFormat(locale, { timeStyle: 'medium', timeZone }).format(new Date(iso));
}

/** A whole number as the reader writes it: `12,345`. */
export function formatCount(n: number, locale?: string): string {
  return new Intl.NumberFormat(locale).format(n);
}

// ---- what a run did (its outcome) ----

export interface SendEmailArgs {
  subject: string;
  body: string;
  recipients: string[];
  invoice_uid: string | undefined;
}

export interface OutcomeApproval {
  /** Null in a sandbox run: it would have asked. */
  taskUid: string | null;
  invoiceUid: string | undefined;
  wouldAsk: SendEmailArgs | undefined;
}

export interface OutcomeEmail {
  /** Null in a sandbox run: it would have sent. */
  draftUid: string | null;
  invoiceUid: string | undefined;
  wouldSend: SendEmailArgs | undefined;
}

export interface OutcomeSkip {
  invoiceUid: string | undefined;
  invoiceNumber: string | undefined;
  reason: string;
}

export interface ReadOutcome {
  summary: string | undefined;
  /** Overdue invoices the collections agent looked at. */
  checked: number | undefined;
  approvals: OutcomeApproval[];
  sent: OutcomeEmail[];
  skipped: OutcomeSkip[];
  replyTasks: { taskUid: string | null; invoiceUid: string | undefined }[];
  /** A follow-up run (trigger `approval`): the approval it carried out and the invoice. */
  followUp:
    | {
        taskUid: string | undefined;
        invoiceUid: string | undefined;
        invoiceNumber: string | undefined;
        sent: boolean;
      }
    | undefined;
  /** Whether anything beyond the summary is in the outcome (the page then offers the raw JSON). */
  hasDetails: boolean;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;
const list = (value: unknown): Json[] => (Array.isArray(value) ? value.filter(isObject) : []);

function sendEmailArgs(value: unknown): SendEmailArgs | undefined {
  if (!isObject(value)) return undefined;
  return {
    subject: typeof value.subject === 'string' ? value.subject : '',
    body: typeof value.body === 'string' ? value.body : '',
    recipients: Array.isArray(value.recipients)
      ? value.recipients.filter((r): r is string => typeof r === 'string')
      : [],
    invoice_uid: str(value.invoice_uid),
  };
}

/**
 * What a run's `outcome` says it did. The built-in collections agent's shapes are read
 * (src/modules/agents/collections-agent.ts: `approvals`, `sent`, `skipped`, `reply_tasks`, `checked`,
 * and a follow-up's `task_uid`/`sent`/`draft_uid`); an outside runtime's outcome is only a summary and
 * details, which the page shows as JSON.
 */
export function readOutcome(outcome: Json | null | undefined): ReadOutcome {
  const o = outcome ?? {};
  const followUp =
    'task_uid' in o && typeof o.sent === 'boolean'
      ? {
          taskUid: str(o.task_uid),
          invoiceUid: str(o.invoice_uid),
          invoiceNumber: str(o.invoice_number),
          sent: o.sent,
        }
      : undefined;
  const sent: OutcomeEmail[] = list(o.sent).map((s) => ({
    draftUid: str(s.draft_uid) ?? null,
    invoiceUid: str(s.invoice_uid),
    wouldSend: sendEmailArgs(s.would_send),
  }));
  // A follow-up run records one email: its draft (or, in a sandbox, what it would send).
  if (followUp && (str(o.draft_uid) || isObject(o.would_send)))
    sent.push({
      draftUid: str(o.draft_uid) ?? null,
      invoiceUid: followUp.invoiceUid,
      wouldSend: sendEmailArgs(o.would_send),
    });
  return {
    summary: str(o.summary),
    checked: typeof o.checked === 'number' ? o.checked : undefined,
    approvals: list(o.approvals).map((a) => ({
      taskUid: str(a.task_uid) ?? null,
      invoiceUid: str(a.invoice_uid),
      wouldAsk: sendEmailArgs(a.tool_args),
    })),
    sent,
    skipped: list(o.skipped).map((s) => ({
      invoiceUid: str(s.invoice_uid),
      invoiceNumber: str(s.invoice_number),
      reason: typeof s.reason === 'string' ? s.reason : '',
    })),
    replyTasks: list(o.reply_tasks).map((r) => ({
      taskUid: str(r.task_uid) ?? null,
      invoiceUid: str(r.invoice_uid),
    })),
    followUp,
    hasDetails: Object.keys(o).some((key) => key !== 'summary'),
  };
}

/** The invoices a run's outcome names, once each, in the order they appear (for their numbers). */
export function invoicesNamed(read: ReadOutcome): string[] {
  const uids = [
    read.followUp?.invoiceUid,
    ...read.approvals.map((a) => a.invoiceUid),
    ...read.sent.map((s) => s.invoiceUid),
    ...read.replyTasks.map((r) => r.invoiceUid),
  ].filter((uid): uid is string => uid !== undefined);
  return [...new Set(uids)];
}

// ---- editing an agent ----

/** The edit form's values; `channel` empty means no notification settings. */
export interface AgentDraft {
  name: string;
  description: string;
  instructions: string;
  status: string;
  channel: string;
  events: EventSwitches;
  triggers: Trigger[];
  tools: Tool[];
}

export function draftOf(agent: Agent): AgentDraft {
  return {
    name: agent.name,
    description: agent.description,
    instructions: agent.instructions,
    status: agent.status,
    channel: agent.notification_config?.chat_channel_id ?? '',
    events: { ...(agent.notification_config?.events ?? DEFAULT_SWITCHES) },
    triggers: agent.triggers.map((t) => ({ ...t })),
    tools: agent.tools.map((t) => ({ ...t })),
  };
}

const cleanTrigger = (t: Trigger): Trigger => ({
  type: t.type,
  ...(t.type === 'schedule' ? { cron: (t.cron ?? '').trim().replace(/\s+/g, ' ') } : {}),
  ...(t.description ? { description: t.description } : {}),
});
const cleanTool = (t: Tool): Tool => ({
  type: t.type.trim(),
  requires_approval: t.requires_approval,
  ...(t.description ? { description: t.description } : {}),
});
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export interface AgentPatch {
  name?: string;
  description?: string;
  instructions?: string;
  status?: AgentStatus;
  notification_config?: { chat_channel_id: string; events: EventSwitches } | null;
  triggers?: PatchTrigger[];
  tools?: Tool[];
}
/** A trigger as PATCH takes it: one of the three types a person configures. */
export type PatchTrigger = Omit<Trigger, 'type'> & { type: (typeof TRIGGER_TYPES)[number] };

/** The PATCH body: only the fields that differ from the agent as it is (nothing when nothing does). */
export function agentPatch(agent: Agent, draft: AgentDraft): AgentPatch {
  const patch: AgentPatch = {};
  if (draft.name.trim() !== agent.name) patch.name = draft.name.trim();
  if (draft.description !== agent.description) patch.description = draft.description;
  if (draft.instructions !== agent.instructions) patch.instructions = draft.instructions;
  if (draft.status !== agent.status) patch.status = draft.status as AgentStatus;
  const channel = draft.channel.trim();
  const config = agent.notification_config;
  if (!channel) {
    if (config) patch.notification_config = null;
  } else if (!config || config.chat_channel_id !== channel || !same(config.events, draft.events)) {
    patch.notification_config = { chat_channel_id: channel, events: { ...draft.events } };
  }
  const triggers = draft.triggers.map(cleanTrigger);
  // The form offers only the three types; a stored trigger of another kind is sent back as it was.
  if (!same(triggers, agent.triggers.map(cleanTrigger))) patch.triggers = triggers as PatchTrigger[];
  const tools = draft.tools.map(cleanTool);
  if (!same(tools, agent.tools.map(cleanTool))) patch.tools = tools;
  return patch;
}

const TOOL_TYPE = /^[a-z][a-z0-9_]{0,63}$/;

/** What the API would refuse in the form, said before sending (field id → sentence). */
export function draftProblems(draft: AgentDraft): Record<string, string> {
  const problems: Record<string, string> = {};
  const name = draft.name.trim();
  if (!name) problems.name = 'An agent needs a name.';
  else if (name.length > 128) problems.name = 'A name has at most 128 characters.';
  draft.triggers.forEach((t, i) => {
    if (t.type === 'schedule' && (t.cron ?? '').trim().split(/\s+/).filter(Boolean).length !== 5)
      problems[`trigger-${i}`] =
        'A schedule needs a cron expression of five fields: minute hour day month weekday (UTC).';
  });
  draft.tools.forEach((t, i) => {
    if (!TOOL_TYPE.test(t.type.trim()))
      problems[`tool-${i}`] =
        'A tool type is lower-case letters, digits and underscores, starting with a letter (send_email).';
  });
  return problems;
}
