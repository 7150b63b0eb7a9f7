import path from 'node:path';
import type { Config } from '../../config.ts';
import type { Metrics } from '../observability/metrics.ts';
import { LocalObjectStorage } from './local-storage.ts';
import type { ObjectStorage } from './storage.ts';

/** The store the configuration names: S3 when any `S3_*` variable is set, else the embedded one. */
export async function createObjectStorage(config: Config, metrics?: Metrics): Promise<ObjectStorage> {
  // The SDK is pinned to a release that supports Node 20; its notice about future releases needing
  // Node 22 would otherwise print on every start and every CLI run.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const settings = config.objectStorage;
  if (settings.kind === 's3') {
    // The AWS SDK loads only where S3 is configured (docs/performance.md#start-and-footprint).
    const { S3ObjectStorage } = await import('./s3-storage.ts');
    return new S3ObjectStorage(settings, metrics);
  }
  return LocalObjectStorage.open({
    rootDir: path.join(config.dataDir, 'objects'),
    bucket: settings.bucket,
    publicBaseUrl: config.publicBaseUrl,
  });
}

/**
 * The origin a browser sends presigned upload forms to: the service itself for the embedded store
 * (`PUBLIC_BASE_URL/storage/<bucket>`), else the S3 endpoint, or AWS's own for the region (path style,
 * as `S3_CLIENT_DEFAULTS` presigns). The console's Content-Security-Policy allows it in `connect-src`.
 */
export function storageUploadOrigin(config: Pick<Config, 'objectStorage' | 'publicBaseUrl'>): string {
  const settings = config.objectStorage;
  if (settings.kind === 'embedded') return new URL(config.publicBaseUrl).origin;
  if (settings.endpoint) return new URL(settings.endpoint).origin;
  const domain = settings.region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
  return `https://s3.${settings.region}.${domain}`;
}
