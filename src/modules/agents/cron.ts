import cronParser from 'cron-parser';

// Pure: the agents service validates triggers with it and the scheduler fires them, without either
// importing the other.

/** Whether a five-field cron expression (UTC) is valid. */
export function isValidCron(expression: string): boolean {
  try {
    cronParser.parseExpression(expression, { utc: true });
    return expression.trim().split(/\s+/).length === 5;
  } catch {
    return false;
  }
}

/** Whether the expression fires at this minute (UTC). */
export function firesAt(expression: string, minute: Date): boolean {
  try {
    const interval = cronParser.parseExpression(expression, {
      utc: true,
      currentDate: new Date(minute.getTime() - 1000),
    });
    return interval.next().getTime() === minute.getTime();
  } catch {
    return false;
  }
}
