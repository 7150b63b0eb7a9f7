export interface Envelope<T> {
  status: 'success';
  status_code: number;
  message: string;
  data: T;
}

export function envelope<T>(data: T, message: string, statusCode = 200): Envelope<T> {
  return { status: 'success', status_code: statusCode, message, data };
}
