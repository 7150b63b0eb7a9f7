export interface Envelope<T> {
  status: 'success';
  status_code: number;
  message: string;
  data: T;
}

export function envelope<T>(data: T, message: string, statusCode = 200): Envelope<T> {
  return { status: 'success', status_code: statusCode, message, data };
}

/**
 * The envelope around data that is already JSON text (a read whose statement wrote its answer): the
 * bytes `envelope` would serialize to, field for field.
 */
export function envelopeJson(dataJson: string, message: string, statusCode = 200): string {
  return `{"status":"success","status_code":${statusCode},"message":${JSON.stringify(message)},"data":${dataJson}}`;
}
