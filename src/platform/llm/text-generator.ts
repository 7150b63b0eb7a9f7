/**
 * Text generation (CONTRACT §6): composes email content from an entity's values. The embedded default
 * is a deterministic built-in composer; with `LLM_*` configured, any OpenAI-compatible chat API.
 * Callers see one interface and one error type, whichever is behind it.
 */
import type { LlmConfig } from '../../config.ts';
import type { Metrics } from '../observability/metrics.ts';
import { BuiltinComposer } from './builtin-composer.ts';
import { OpenAiGenerator } from './openai-generator.ts';
import type { TextGenerator } from './text-generation.ts';

export * from './text-generation.ts';

export function createTextGenerator(config: LlmConfig, metrics?: Metrics): TextGenerator {
  return config.kind === 'openai' ? new OpenAiGenerator(config, metrics) : new BuiltinComposer();
}
