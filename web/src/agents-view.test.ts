import { describe, expect, it } from 'vitest';
import {
  agentPatch,
  describeCron,
  draftOf,
  draftProblems,
  formatDuration,
  formatRunInstant,
  formatRunTime,
  invoicesNamed,
  readOutcome,
  runDuration,
  runFields,
  triggersSummary,
  triggerText,
  type Agent,
} from './agents-view.ts';

const agent: Agent = {
  uid: '00000000-0000-4000-8000-000000000001',
  organization_uid: '00000000-0000-4000-8000-000000000002',
  agent_type: 'collections',
  name: 'Collector',
  description: 'Chases overdue invoices',
  instructions: 'Be polite.',
  status: 'active',
  created_by_uid: null,
  notification_config: null,
  runs_count: 3,
  created_on: '2026-11-01T09:00:00Z',
  updated_on: '2026-11-02T09:00:00Z',
  triggers: [{ type: 'manual' }, { type: 'schedule', cron: '0 9 * * *' }],
  tools: [{ type: 'send_email', requires_approval: true }],
};

describe('triggers in words', () => {
  it('common cron shapes', () => {
    expect(describeCron('0 9 * * *')).toBe('every day at 09:00 UTC');
    expect(describeCron('30 8 * * 1-5')).toBe('every weekday at 08:30 UTC');
    expect(describeCron('0 9 * * MON-FRI')).toBe('every weekday at 09:00 UTC');
    expect(describeCron('0 17 * * 1')).toBe('every Monday at 17:00 UTC');
    expect(describeCron('0 17 * * 5,1,3')).toBe('every Monday, Wednesday and Friday at 17:00 UTC');
    expect(describeCron('0 7 * * 7')).toBe('every Sunday at 07:00 UTC');
    expect(describeCron('15 6 1 * *')).toBe('on the 1st of every month at 06:15 UTC');
    expect(describeCron('0 6 22 * *')).toBe('on the 22nd of every month at 06:00 UTC');
    expect(describeCron('0 6 11 * *')).toBe('on the 11th of every month at 06:00 UTC');
    expect(describeCron('* * * * *')).toBe('every minute');
    expect(describeCron('*/15 * * * *')).toBe('every 15 minutes');
    expect(describeCron('5 * * * *')).toBe('every hour at :05');
    expect(describeCron('0 */4 * * *')).toBe('every 4 hours at :00');
  });

  it('anything else is not described (the page shows the expression)', () => {
    for (const cron of [
      '0 9 * 1 *',
      '0 9-17 * * *',
      '0 9 1 * 1',
      '0 9 L * *',
      '0 9 * *',
      '61 9 * * *',
      '0 9 * * 1#2',
    ])
      expect(describeCron(cron), cron).toBeUndefined();
    expect(triggerText({ type: 'schedule', cron: '0 9-17 * * *' })).toBe('Schedule: cron 0 9-17 * * * (UTC)');
  });

  it('a list of triggers', () => {
    expect(triggersSummary(agent.triggers)).toBe('Manual · every day at 09:00 UTC');
    expect(triggersSummary([{ type: 'email_received' }])).toBe('When an email arrives');
    expect(triggersSummary([])).toBe('None (runs only when started)');
  });
});

describe('a run in numbers', () => {
  it('durations', () => {
    expect(formatDuration(400)).toBe('0 s');
    expect(formatDuration(45_000)).toBe('45 s');
    expect(formatDuration(185_000)).toBe('3 min 5 s');
    expect(formatDuration(120_000)).toBe('2 min');
    expect(formatDuration(3_720_000)).toBe('1 h 2 min');
    expect(runDuration({ status: 'pending' })).toBeUndefined();
    expect(runDuration({ started_on: '2026-11-01T09:00:00Z', completed_on: '2026-11-01T09:00:12Z' })).toBe(
      '12 s',
    );
    expect(runDuration({ started_on: '2026-11-01T09:00:00Z' }, Date.parse('2026-11-01T09:01:00Z'))).toBe(
      '1 min',
    );
  });

  it('times to the second in the reader zone', () => {
    expect(formatRunTime('2026-11-26T23:30:05Z', 'en-US', 'Europe/Berlin')).toBe('Nov 27, 12:30:05 AM');
    // Beside the request: the time alone on the same day (in the reader's zone), else the date too.
    const requested = '2026-11-26T22:59:00Z';
    expect(formatRunInstant('2026-11-26T22:59:30Z', requested, 'en-US', 'Europe/Berlin')).toBe('11:59:30 PM');
    expect(formatRunInstant('2026-11-26T23:00:30Z', requested, 'en-US', 'Europe/Berlin')).toBe(
      'Nov 27, 12:00:30 AM',
    );
    expect(formatRunInstant('2026-11-26T23:00:30Z', requested, 'en-US', 'UTC')).toBe('11:00:30 PM');
  });

  it('token_usage is asked for only for those who may see it', () => {
    expect(runFields(false)).not.toContain('token_usage');
    expect(runFields(true).split(',')).toContain('token_usage');
    expect(runFields(true).split(',')).toContain('outcome');
  });
});

describe("a collections run's outcome", () => {
  it('a sweep: approvals raised, emails sent, invoices skipped, reply tasks', () => {
    const read = readOutcome({
      summary: '3 overdue invoice(s) checked, 1 approval(s) requested, 1 reminder(s) sent, 1 skipped',
      checked: 3,
      approvals: [{ task_uid: 't1', invoice_uid: 'i1' }],
      sent: [{ invoice_uid: 'i2', draft_uid: 'd2' }],
      skipped: [
        {
          invoice_uid: 'i3',
          invoice_number: 'INV-3',
          reason: 'an approval for this invoice is already open',
        },
      ],
      reply_tasks: [{ task_uid: 't4', invoice_uid: 'i1' }],
    });
    expect(read).toMatchObject({
      checked: 3,
      approvals: [{ taskUid: 't1', invoiceUid: 'i1', wouldAsk: undefined }],
      sent: [{ draftUid: 'd2', invoiceUid: 'i2', wouldSend: undefined }],
      skipped: [
        { invoiceUid: 'i3', invoiceNumber: 'INV-3', reason: 'an approval for this invoice is already open' },
      ],
      replyTasks: [{ taskUid: 't4', invoiceUid: 'i1' }],
      followUp: undefined,
      hasDetails: true,
    });
    expect(invoicesNamed(read)).toEqual(['i1', 'i2']);
  });

  it('a sandbox sweep: what it would ask and send', () => {
    const args = {
      type: 'send_email',
      subject: 'Reminder',
      body: 'Hello',
      recipients: ['ap@x.test'],
      invoice_uid: 'i1',
    };
    const read = readOutcome({
      summary: 'Sandbox (nothing sent, no approval raised): …',
      approvals: [{ task_uid: null, invoice_uid: 'i1', tool_args: args }],
      sent: [{ invoice_uid: 'i2', draft_uid: null, would_send: { ...args, invoice_uid: 'i2' } }],
      reply_tasks: [{ task_uid: '', invoice_uid: 'i1' }],
    });
    expect(read.approvals).toEqual([
      {
        taskUid: null,
        invoiceUid: 'i1',
        wouldAsk: { subject: 'Reminder', body: 'Hello', recipients: ['ap@x.test'], invoice_uid: 'i1' },
      },
    ]);
    expect(read.sent[0]).toMatchObject({ draftUid: null, wouldSend: { invoice_uid: 'i2' } });
    expect(read.replyTasks).toEqual([{ taskUid: null, invoiceUid: 'i1' }]);
  });

  it('a follow-up run: the approval it carried out and the email it sent (or why it did not)', () => {
    const sent = readOutcome({
      task_uid: 't1',
      invoice_uid: 'i1',
      invoice_number: 'INV-1',
      sent: true,
      draft_uid: 'd1',
      message_id: '<m@x>',
      summary: 'Reminder for invoice INV-1 sent',
    });
    expect(sent.followUp).toEqual({ taskUid: 't1', invoiceUid: 'i1', invoiceNumber: 'INV-1', sent: true });
    expect(sent.sent).toEqual([{ draftUid: 'd1', invoiceUid: 'i1', wouldSend: undefined }]);
    const paid = readOutcome({
      task_uid: 't1',
      invoice_uid: 'i1',
      sent: false,
      summary: 'was paid meanwhile',
    });
    expect(paid.sent).toEqual([]);
    expect(paid.followUp?.sent).toBe(false);
  });

  it("an outside runtime's outcome or none at all", () => {
    expect(readOutcome(null)).toMatchObject({
      summary: undefined,
      approvals: [],
      sent: [],
      hasDetails: false,
    });
    expect(readOutcome({ summary: 'stopped' }).hasDetails).toBe(false);
    expect(readOutcome({ summary: 'done', items: 2, sent: 'not a list' })).toMatchObject({
      sent: [],
      hasDetails: true,
    });
  });
});

describe('editing an agent sends only what changed', () => {
  it('nothing changed: an empty body', () => {
    expect(agentPatch(agent, draftOf(agent))).toEqual({});
  });

  it('text fields, status; the name trimmed', () => {
    const draft = { ...draftOf(agent), name: ' Collector 2 ', instructions: 'Be firm.', status: 'paused' };
    expect(agentPatch(agent, draft)).toEqual({
      name: 'Collector 2',
      instructions: 'Be firm.',
      status: 'paused',
    });
  });

  it('notifications: a channel sets them (all switches), a changed switch sends them again, none clears them', () => {
    const draft = { ...draftOf(agent), channel: ' C0COLLECT ' };
    expect(agentPatch(agent, draft)).toEqual({
      notification_config: {
        chat_channel_id: 'C0COLLECT',
        events: { action_taken: true, approval_required: true, outcome: true, error: true, digest: false },
      },
    });
    const configured: Agent = {
      ...agent,
      notification_config: agentPatch(agent, draft).notification_config!,
    };
    expect(agentPatch(configured, draftOf(configured))).toEqual({});
    const quieter = draftOf(configured);
    quieter.events.outcome = false;
    expect(agentPatch(configured, quieter).notification_config?.events.outcome).toBe(false);
    expect(agentPatch(configured, { ...draftOf(configured), channel: '' })).toEqual({
      notification_config: null,
    });
  });

  it('triggers and tools as whole lists, when they differ', () => {
    const draft = draftOf(agent);
    draft.triggers[1] = { type: 'schedule', cron: ' 0  8 * * 1-5 ' };
    draft.tools[0] = { type: 'send_email', requires_approval: false };
    expect(agentPatch(agent, draft)).toEqual({
      triggers: [{ type: 'manual' }, { type: 'schedule', cron: '0 8 * * 1-5' }],
      tools: [{ type: 'send_email', requires_approval: false }],
    });
    // A schedule changed to another type loses its cron.
    const manual = draftOf(agent);
    manual.triggers[1] = { type: 'email_received', cron: '0 9 * * *' };
    expect(agentPatch(agent, manual).triggers).toEqual([{ type: 'manual' }, { type: 'email_received' }]);
  });

  it('what the API would refuse is said first', () => {
    const draft = draftOf(agent);
    draft.name = '   ';
    draft.triggers.push({ type: 'schedule', cron: '0 9 * *' });
    draft.tools.push({ type: 'Send Email', requires_approval: true });
    expect(Object.keys(draftProblems(draft))).toEqual(['name', 'trigger-2', 'tool-1']);
    expect(draftProblems(draftOf(agent))).toEqual({});
  });
});
