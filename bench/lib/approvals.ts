/**
 * The `approvals` group of `npm run bench` (issue 21: "the long-poll returns within 100 ms of a
 * decision"). See bench/README.md ("Approval long-poll").
 *
 * Each round raises an approval (`POST /api/agents/{uid}/approvals`), holds `GET /api/work-tasks/{uid}
 * ?wait=60` on a real HTTP connection, decides it with `PATCH /api/work-tasks/{uid}` {action: approve}
 * and records when the held GET answered, against when the PATCH answered and when it was sent. Cases:
 * one at a time and `burst` at once, on one server process and (PostgreSQL) with the GET held by one
 * process and the PATCH sent to another on the same database (LISTEN/NOTIFY between processes).
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Engine } from '../scenarios.ts';
import { errorMessage } from './cleanup.ts';
import { BenchError, cpuSampler, type CpuUse } from './processes.ts';

export const APPROVALS_GROUP = 'approvals';

export type ApprovalsId = 'approvals-pglite' | 'approvals-postgres';

interface ApprovalsItem {
  id: ApprovalsId;
  group: typeof APPROVALS_GROUP;
  engine: Engine;
  title: string;
}

/** One measurement per engine (selectable by id, pattern or "approvals"). */
export const APPROVAL_ITEMS: readonly ApprovalsItem[] = [
  { id: 'approvals-pglite', group: APPROVALS_GROUP, engine: 'pglite', title: 'approval long-poll, PGlite' },
  {
    id: 'approvals-postgres',
    group: APPROVALS_GROUP,
    engine: 'postgres',
    title: 'approval long-poll, PostgreSQL',
  },
];

/** Issue 21's target: p99 of (held GET answered − PATCH answered) ≤ 100 ms. */
export const APPROVAL_TARGET_MS = 100;
/** The `wait` of the held GET: the longest the route allows; no round comes near it. */
const WAIT_S = 60;
/** Unmeasured rounds before each case (JIT, schemas compiled on first use, a listening connection). */
const WARMUP_ROUNDS = 20;
/** Plain GETs (and bursts of them) timed to choose how long a GET is left to be held. */
const CALIBRATION_GETS = 20;
const CALIBRATION_BURSTS = 3;
const REQUEST_TIMEOUT_MS = (WAIT_S + 15) * 1000;

// ---------------------------------------------------------------------------------------------------
// Results

/** Nearest-rank percentiles of a sample in ms (as the load scenarios' exact latencies). */
export interface Spread {
  min: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  avg: number;
}

export type ApprovalCaseId = 'one-process' | 'one-process-burst' | 'two-processes' | 'two-processes-burst';

export interface ApprovalCase {
  id: ApprovalCaseId;
  title: string;
  /** 1: GET and PATCH on the same server process; 2: GET held by one, PATCH sent to the other. */
  processes: 1 | 2;
  /** Approvals waited on at once and decided in one burst (1: one at a time). */
  concurrency: number;
  /** Measured batches (of `concurrency` approvals each) and the samples they gave. */
  batches: number;
  samples: number;
  /** How long each GET was left to be held before the decision was sent (see `calibration`). */
  hold_ms: number;
  /** t(GET answered) − t(PATCH answered): may be negative when the held GET answers first. */
  get_after_patch_answered_ms: Spread | null;
  /** t(GET answered) − t(PATCH sent). */
  get_after_patch_sent_ms: Spread | null;
  /** The PATCH's own round trip (sent → answered). */
  patch_ms: Spread | null;
  /** Wall time of the measured batches (the holds included) and where the CPU went meanwhile. */
  duration_s: number;
  cpu: CpuUse | null;
  target: { max_ms: number; value_ms: number | null; pass: boolean };
  /** Every sample, in the order taken (ms, 3 decimals). */
  raw: { get_after_patch_answered_ms: number[]; get_after_patch_sent_ms: number[] };
  error?: string;
}

export interface ApprovalMeasurement {
  id: ApprovalsId;
  title: string;
  engine: Engine;
  /**
   * Plain `GET /api/work-tasks/{uid}` (no wait) of an undecided approval on the server that holds the
   * GETs, sent → answered: alone, and `burst` at once (until the last answered). A held GET has had at
   * least twice that (and at least BENCH_APPROVAL_HOLD_MS) to be read and registered before the decision.
   */
  calibration: { plain_get_ms: Spread; burst_plain_get_ms: Spread } | null;
  cases: ApprovalCase[];
  error?: string;
}

export interface ApprovalResults {
  /** BENCH_APPROVAL_ROUNDS, BENCH_APPROVAL_BURST, BENCH_APPROVAL_HOLD_MS. */
  rounds: number;
  burst: number;
  hold_ms: number;
  warmup_rounds: number;
  wait_s: number;
  target_ms: number;
  measurements: ApprovalMeasurement[];
  ok: boolean;
}

// ---------------------------------------------------------------------------------------------------
// HTTP: node:http on keep-alive connections, timed in this process

interface Answer {
  status: number;
  body: string;
  sentAt: number;
  answeredAt: number;
}

interface Sent {
  sentAt: number;
  answer: Promise<Answer>;
}

/** A JSON client with one API key and its own keep-alive connections to one server. */
class Client {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  private readonly url: URL;

  constructor(
    baseUrl: string,
    private readonly apiKey: string,
  ) {
    this.url = new URL(baseUrl);
  }

  /** Sends now; `sentAt` is taken just before the request is handed to the socket. */
  send(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown): Sent {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}` };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    let sentAt = 0;
    const answer = new Promise<Answer>((resolve, reject) => {
      const request = http.request(
        {
          host: this.url.hostname,
          port: this.url.port,
          method,
          path,
          headers,
          agent: this.agent,
          timeout: REQUEST_TIMEOUT_MS,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              body: Buffer.concat(chunks).toString('utf8'),
              sentAt,
              answeredAt: performance.now(),
            }),
          );
          response.on('error', reject);
        },
      );
      request.on('timeout', () =>
        request.destroy(new Error(`${method} ${path}: no answer in ${REQUEST_TIMEOUT_MS / 1000} s`)),
      );
      request.on('error', reject);
      sentAt = performance.now();
      request.end(payload);
    });
    return { sentAt, answer };
  }

  /** The answer's JSON `data`, or a BenchError unless it has the expected status. */
  async json(method: 'GET' | 'POST' | 'PATCH', path: string, expect: number, body?: unknown) {
    return data(await this.send(method, path, body).answer, `${method} ${path}`, expect);
  }

  close(): void {
    this.agent.destroy();
  }
}

function data(answer: Answer, what: string, expect: number): Record<string, unknown> {
  if (answer.status !== expect) {
    throw new BenchError(
      `${what} answered ${answer.status}, expected ${expect}: ${answer.body.slice(0, 300)}`,
    );
  }
  try {
    return (JSON.parse(answer.body) as { data: Record<string, unknown> }).data;
  } catch {
    throw new BenchError(`${what} answered no JSON envelope: ${answer.body.slice(0, 300)}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Measuring

export interface ApprovalServer {
  name: string;
  baseUrl: string;
  pid: number | undefined;
  /** Throws a BenchError when the server has died. */
  assertAlive(): void;
}

export interface ApprovalsOptions {
  engine: Engine;
  /** The running server of the engine (it holds the GETs), and an admin's API key of its organization. */
  main: ApprovalServer;
  apiKey: string;
  /** PostgreSQL: starts a second server process on the same database (the caller's startServer). */
  startSecond?: () => Promise<ApprovalServer & { stop(): Promise<void> }>;
  /** The database whose PostgreSQL backends' CPU is reported apart. */
  postgresDatabase?: string | undefined;
  rounds: number;
  burst: number;
  holdMs: number;
  log: (message: string) => void;
}

interface Sample {
  afterAnswered: number;
  afterSent: number;
  patch: number;
}

interface Round {
  /** Raises one approval and answers its task uid. */
  raise(): Promise<string>;
  holder: Client;
  decider: Client;
}

/**
 * `n` approvals raised, their GETs held at once, then decided in one burst (n = 1: one round). Checks
 * every answer: each PATCH 200, each GET 200 with the approval decided, and no GET answered before the
 * decisions were sent.
 */
async function batch(round: Round, n: number, holdMs: number): Promise<Sample[]> {
  const uids: string[] = [];
  for (let i = 0; i < n; i++) uids.push(await round.raise());
  const gets = uids.map((uid) => round.holder.send('GET', `/api/work-tasks/${uid}?wait=${WAIT_S}`));
  // Settled GETs must not reject unobserved while we sleep (they are awaited below).
  const getAnswers = Promise.all(gets.map((g) => g.answer));
  getAnswers.catch(() => undefined);
  await sleep(holdMs);
  const patches = uids.map((uid) =>
    round.decider.send('PATCH', `/api/work-tasks/${uid}`, { action: 'approve' }),
  );
  const [held, decided] = await Promise.all([getAnswers, Promise.all(patches.map((p) => p.answer))]);
  return uids.map((uid, i) => {
    const get = held[i]!;
    const patch = decided[i]!;
    const task = data(get, `GET /api/work-tasks/${uid}?wait=${WAIT_S}`, 200);
    data(patch, `PATCH /api/work-tasks/${uid}`, 200);
    if (get.answeredAt < patch.sentAt) {
      throw new BenchError(
        `GET /api/work-tasks/${uid}?wait=${WAIT_S} answered before the decision was sent (not held)`,
      );
    }
    if (task.resolution !== 'approved' || task.status !== 'done') {
      throw new BenchError(
        `the held GET of ${uid} answered resolution ${String(task.resolution)}, status ${String(task.status)}`,
      );
    }
    return {
      afterAnswered: get.answeredAt - patch.answeredAt,
      afterSent: get.answeredAt - patch.sentAt,
      patch: patch.answeredAt - patch.sentAt,
    };
  });
}

const round3 = (value: number) => Number(value.toFixed(3));

function spread(values: number[]): Spread {
  if (values.length === 0) throw new BenchError('no samples');
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return {
    min: round3(sorted[0]!),
    p50: round3(at(0.5)),
    p95: round3(at(0.95)),
    p99: round3(at(0.99)),
    max: round3(sorted[sorted.length - 1]!),
    avg: round3(sorted.reduce((a, b) => a + b, 0) / sorted.length),
  };
}

/** Plain GETs of an undecided approval: alone, then `burst` at once (until the last answered). */
async function calibrate(
  client: Client,
  uid: string,
  burst: number,
): Promise<NonNullable<ApprovalMeasurement['calibration']>> {
  const path = `/api/work-tasks/${uid}`;
  const once = async () => {
    const answer = await client.send('GET', path).answer;
    data(answer, `GET ${path}`, 200);
    return answer.answeredAt - answer.sentAt;
  };
  const together = async () => {
    const sent = Array.from({ length: burst }, () => client.send('GET', path));
    const answers = await Promise.all(sent.map((s) => s.answer));
    for (const answer of answers) data(answer, `GET ${path}`, 200);
    return Math.max(...answers.map((a) => a.answeredAt)) - Math.min(...sent.map((s) => s.sentAt));
  };
  for (let i = 0; i < 5; i++) await once();
  await together();
  const alone: number[] = [];
  for (let i = 0; i < CALIBRATION_GETS; i++) alone.push(await once());
  const bursts: number[] = [];
  for (let i = 0; i < CALIBRATION_BURSTS; i++) bursts.push(await together());
  return { plain_get_ms: spread(alone), burst_plain_get_ms: spread(bursts) };
}

interface CaseSpec {
  id: ApprovalCaseId;
  title: string;
  processes: 1 | 2;
  concurrency: number;
}

async function measureCase(
  spec: CaseSpec,
  round: Round,
  options: ApprovalsOptions,
  holdMs: number,
  servers: ApprovalServer[],
): Promise<ApprovalCase> {
  const { log } = options;
  const result = emptyCase(spec, options, holdMs);
  const { batches } = result;
  try {
    log(
      `  ${spec.id}: ${spec.title}; ${batches} batch(es) of ${spec.concurrency}, each GET held ${holdMs} ms before the decision`,
    );
    // Warm-up: the same work, not recorded.
    const warmup = spec.concurrency === 1 ? Math.min(WARMUP_ROUNDS, options.rounds) : 1;
    for (let i = 0; i < warmup; i++) await batch(round, spec.concurrency, holdMs);
    const samples: Sample[] = [];
    const sampler = cpuSampler(options.main.pid, options.postgresDatabase);
    const started = performance.now();
    for (let i = 0; i < batches; i++) {
      samples.push(...(await batch(round, spec.concurrency, holdMs)));
    }
    result.duration_s = round3((performance.now() - started) / 1000);
    result.cpu = sampler.stop();
    for (const server of servers) server.assertAlive();
    result.samples = samples.length;
    result.raw.get_after_patch_answered_ms = samples.map((s) => round3(s.afterAnswered));
    result.raw.get_after_patch_sent_ms = samples.map((s) => round3(s.afterSent));
    result.get_after_patch_answered_ms = spread(samples.map((s) => s.afterAnswered));
    result.get_after_patch_sent_ms = spread(samples.map((s) => s.afterSent));
    result.patch_ms = spread(samples.map((s) => s.patch));
    const value = result.get_after_patch_answered_ms.p99;
    result.target = { max_ms: APPROVAL_TARGET_MS, value_ms: value, pass: value <= APPROVAL_TARGET_MS };
    const a = result.get_after_patch_answered_ms;
    const s = result.get_after_patch_sent_ms;
    log(
      `    ${samples.length} samples: GET − PATCH answered p50 ${a.p50.toFixed(2)}, p95 ${a.p95.toFixed(2)}, p99 ${a.p99.toFixed(2)}, max ${a.max.toFixed(2)} ms; GET − PATCH sent p50 ${s.p50.toFixed(2)}, p99 ${s.p99.toFixed(2)}, max ${s.max.toFixed(2)} ms; CPU: server ${result.cpu.server_percent ?? '?'}%, postgres ${result.cpu.postgres_percent ?? '?'}%, others ${result.cpu.others_percent ?? '?'}%`,
    );
  } catch (error) {
    for (const server of servers) server.assertAlive();
    result.error = errorMessage(error);
    log(`  ${spec.id} FAILED: ${result.error}`);
  }
  return result;
}

/** The engine's measurement: an active agent, the calibration, then each case. */
export async function runApprovals(
  item: ApprovalsItem,
  options: ApprovalsOptions,
): Promise<ApprovalMeasurement> {
  const { log, main } = options;
  const result: ApprovalMeasurement = {
    id: item.id,
    title: item.title,
    engine: item.engine,
    calibration: null,
    cases: [],
  };
  const holder = new Client(main.baseUrl, options.apiKey);
  const clients = [holder];
  try {
    log(`  ${item.id}: ${item.title}`);
    const agent = await holder.json('POST', '/api/agents', 201, {
      name: 'Bench approvals',
      status: 'active',
    });
    const agentUid = String(agent.uid);
    let raised = 0;
    const raise = async () => {
      raised++;
      const task = await holder.json('POST', `/api/agents/${agentUid}/approvals`, 201, {
        title: `Bench approval ${raised}`,
        reasoning: 'The bench measures how soon a held GET hears the decision',
        tool_args: { type: 'bench', n: raised },
        trigger: { type: 'bench' },
      });
      if (task.type !== 'hil_approval' || task.resolution !== null) {
        throw new BenchError(`POST approvals answered ${JSON.stringify(task).slice(0, 300)}`);
      }
      return String(task.uid);
    };

    const calibration = await calibrate(holder, await raise(), options.burst);
    result.calibration = calibration;
    const holdFor = (concurrency: number) => {
      const plain = concurrency === 1 ? calibration.plain_get_ms.max : calibration.burst_plain_get_ms.max;
      return Math.max(options.holdMs, Math.ceil(2 * plain));
    };
    log(
      `    plain GET of the task: p50 ${calibration.plain_get_ms.p50.toFixed(2)} ms, max ${calibration.plain_get_ms.max.toFixed(2)} ms alone; ${options.burst} at once, all answered in ≤ ${calibration.burst_plain_get_ms.max.toFixed(2)} ms`,
    );

    const cases: Array<{ spec: CaseSpec; decider: () => Promise<Client> }> = [];
    const decider = new Client(main.baseUrl, options.apiKey);
    clients.push(decider);
    cases.push(
      {
        spec: { id: 'one-process', title: 'GET held and PATCH on one process', processes: 1, concurrency: 1 },
        decider: async () => decider,
      },
      {
        spec: {
          id: 'one-process-burst',
          title: `${options.burst} GETs held, ${options.burst} PATCHes at once, one process`,
          processes: 1,
          concurrency: options.burst,
        },
        decider: async () => decider,
      },
    );
    let second: (ApprovalServer & { stop(): Promise<void> }) | undefined;
    const servers = [main];
    if (options.startSecond) {
      const start = options.startSecond;
      let otherClient: Client | undefined;
      const other = async () => {
        if (!otherClient) {
          second = await start();
          servers.push(second);
          otherClient = new Client(second.baseUrl, options.apiKey);
          clients.push(otherClient);
        }
        return otherClient;
      };
      cases.push(
        {
          spec: {
            id: 'two-processes',
            title: 'GET held by one process, PATCH sent to another',
            processes: 2,
            concurrency: 1,
          },
          decider: other,
        },
        {
          spec: {
            id: 'two-processes-burst',
            title: `${options.burst} GETs held by one process, ${options.burst} PATCHes at once to another`,
            processes: 2,
            concurrency: options.burst,
          },
          decider: other,
        },
      );
    }
    try {
      for (const { spec, decider: pick } of cases) {
        let chosen: Client;
        try {
          chosen = await pick();
        } catch (error) {
          main.assertAlive();
          result.cases.push(emptyCase(spec, options, holdFor(spec.concurrency), errorMessage(error)));
          log(`  ${spec.id} FAILED: ${errorMessage(error)}`);
          continue;
        }
        result.cases.push(
          await measureCase(
            spec,
            { raise, holder, decider: chosen },
            options,
            holdFor(spec.concurrency),
            servers,
          ),
        );
      }
    } finally {
      await second?.stop();
    }
  } catch (error) {
    main.assertAlive();
    result.error = errorMessage(error);
    log(`  ${item.id} FAILED: ${result.error}`);
  } finally {
    for (const client of clients) client.close();
  }
  return result;
}

/** A case before it is measured (and as it stays when it fails). */
function emptyCase(spec: CaseSpec, options: ApprovalsOptions, holdMs: number, error?: string): ApprovalCase {
  return {
    ...spec,
    batches: Math.ceil(options.rounds / spec.concurrency),
    samples: 0,
    hold_ms: holdMs,
    get_after_patch_answered_ms: null,
    get_after_patch_sent_ms: null,
    patch_ms: null,
    duration_s: 0,
    cpu: null,
    target: { max_ms: APPROVAL_TARGET_MS, value_ms: null, pass: false },
    raw: { get_after_patch_answered_ms: [], get_after_patch_sent_ms: [] },
    ...(error === undefined ? {} : { error }),
  };
}

/** The group's results: its settings, each engine's measurement, and whether all produced figures. */
export function approvalResults(
  measurements: ApprovalMeasurement[],
  settings: { rounds: number; burst: number; holdMs: number },
): ApprovalResults {
  return {
    rounds: settings.rounds,
    burst: settings.burst,
    hold_ms: settings.holdMs,
    warmup_rounds: Math.min(WARMUP_ROUNDS, settings.rounds),
    wait_s: WAIT_S,
    target_ms: APPROVAL_TARGET_MS,
    measurements,
    ok: measurements.every((m) => !m.error && m.cases.every((c) => !c.error)),
  };
}
