import { describe, expect, it } from 'vitest';
import { moveActive, resultPath, searchQuery } from './search.ts';

describe('the search palette', () => {
  it('sends a query of 2 to 200 characters, trimmed; shorter shows recent items', () => {
    expect(searchQuery(' a ')).toBeUndefined();
    expect(searchQuery('  AR-1 ')).toBe('AR-1');
    expect(searchQuery('x'.repeat(250))).toHaveLength(200);
  });

  it('opens invoices and tasks on their pages, pending approvals in the inbox, knowledge on its page', () => {
    const pending = new Set(['t-1']);
    const result = (entity_type: string, entity_uid = 'u-1') => ({ entity_type, entity_uid, label: 'x' });
    expect(resultPath(result('invoice'), pending)).toBe('/app/invoices/u-1');
    expect(resultPath(result('task', 't-1'), pending)).toBe('/app/inbox/t-1');
    expect(resultPath(result('task', 't-2'), pending)).toBe('/app/tasks/t-2');
    expect(resultPath(result('knowledge'), pending)).toBe('/app/knowledge');
    expect(resultPath(result('conversation'), pending)).toBeUndefined();
  });

  it('arrows move through the results and wrap around', () => {
    expect(moveActive(-1, 1, 3)).toBe(0);
    expect(moveActive(-1, -1, 3)).toBe(2);
    expect(moveActive(2, 1, 3)).toBe(0);
    expect(moveActive(0, -1, 3)).toBe(2);
    expect(moveActive(0, 1, 0)).toBe(-1);
  });
});
