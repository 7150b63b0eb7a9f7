import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config.ts';
import { createTextGenerator } from './text-generator.ts';

const llm = (env: Record<string, string>) => loadConfig({ DATA_DIR: '/tmp/remit-config-test', ...env }).llm;

describe('LLM_* configuration', () => {
  it('nothing set: the built-in composer', () => {
    expect(llm({})).toEqual({ kind: 'builtin' });
    expect(llm({ LLM_TIMEOUT_MS: '5000', LLM_MODEL: '' })).toEqual({ kind: 'builtin' });
    expect(createTextGenerator(llm({})).kind).toBe('builtin');
  });

  it('an OpenAI-compatible API with base URL, key, model and timeout', () => {
    const config = llm({
      LLM_BASE_URL: 'http://127.0.0.1:11434/v1',
      LLM_API_KEY: ' sk-1 ',
      LLM_MODEL: 'llama3.1',
      LLM_TIMEOUT_MS: '5000',
    });
    expect(config).toEqual({
      kind: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKey: 'sk-1',
      model: 'llama3.1',
      timeoutMs: 5000,
    });
    expect(createTextGenerator(config).kind).toBe('openai');
    expect(llm({ LLM_BASE_URL: 'http://localhost:8000/v1', LLM_MODEL: 'm' })).toMatchObject({
      apiKey: undefined,
      timeoutMs: 20_000,
    });
    expect(llm({ LLM_API_KEY: 'sk-1', LLM_MODEL: 'gpt-4o-mini' })).toMatchObject({ baseUrl: undefined });
  });

  it('refuses incomplete or malformed settings at start', () => {
    expect(() => llm({ LLM_BASE_URL: 'http://x.test/v1' })).toThrow(ConfigError);
    expect(() => llm({ LLM_BASE_URL: 'http://x.test/v1' })).toThrow('LLM_MODEL');
    expect(() => llm({ LLM_MODEL: 'm' })).toThrow('LLM_API_KEY');
    expect(() => llm({ LLM_BASE_URL: 'ftp://x.test', LLM_MODEL: 'm' })).toThrow('LLM_BASE_URL');
    expect(() => llm({ LLM_TIMEOUT_MS: '50' })).toThrow('LLM_TIMEOUT_MS');
    expect(() => llm({ LLM_TIMEOUT_MS: 'soon' })).toThrow('LLM_TIMEOUT_MS');
  });
});
