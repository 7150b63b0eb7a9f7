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
