import { performance } from 'node:perf_hooks';
import { failureOutcome, type Metrics, type OutboundOutcome, type OutboundTarget } from './metrics.ts';
import { inSpan } from './tracing.ts';

/**
 * One call to an outside service, timed into `remit_outbound_request_duration_seconds` and (with
 * tracing) wrapped in a span `<target> <operation>`, under which the HTTP client span of the call
 * itself appears. `outcomeOf` judges an answer that is not a success (an HTTP error status); a throw is
 * `timeout` or `error`.
 */
export function observeOutbound<T>(
  metrics: Metrics | undefined,
  target: OutboundTarget,
  operation: string,
  call: () => Promise<T>,
  outcomeOf?: (result: T) => OutboundOutcome,
): Promise<T> {
  return inSpan(
    `${target} ${operation}`,
    {
      kind: 'internal',
      attributes: { 'remit.outbound.target': target, 'remit.outbound.operation': operation },
    },
    async (span) => {
      const started = performance.now();
      let outcome: OutboundOutcome = 'error';
      try {
        const result = await call();
        outcome = outcomeOf ? outcomeOf(result) : 'ok';
        return result;
      } catch (error) {
        outcome = failureOutcome(error);
        throw error;
      } finally {
        span?.setAttribute('remit.outbound.outcome', outcome);
        metrics?.outboundCall(target, operation, outcome, (performance.now() - started) / 1000);
      }
    },
  );
}
