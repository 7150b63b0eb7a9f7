import fs from 'node:fs/promises';

/**
 * Watches the free space of the data directory. With the embedded database every write lands there;
 * PGlite answers a full disk mid-write with an error at best, and when its write-ahead log cannot be
 * written the process stops answering at all. So writes are refused *before* the disk is full: below
 * `minFreeBytes` the service answers 507 `storage_full` to every write, and the job queue stops fetching
 * (fetching a job is a write), while reads keep answering. When space is freed, writes resume by
 * themselves.
 */
export class DiskSpaceGuard {
  private lastCheck = 0;
  private free: number | undefined;
  private low = false;
  private pending: Promise<boolean> | undefined;

  constructor(
    private readonly dir: string,
    readonly minFreeBytes: number,
    private readonly onChange: (low: boolean, freeBytes: number) => void = () => undefined,
    /** A statfs at most this often: cheap, but not once per request under load. */
    private readonly maxAgeMs = 250,
  ) {}

  /** Free bytes at the last check (undefined before the first one). */
  get freeBytes(): number | undefined {
    return this.free;
  }

  /** Whether writes are refused now; refreshed when the last check is older than `maxAgeMs`. */
  async isLow(): Promise<boolean> {
    if (Date.now() - this.lastCheck < this.maxAgeMs) return this.low;
    this.pending ??= this.refresh().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async refresh(): Promise<boolean> {
    try {
      const stats = await fs.statfs(this.dir);
      this.free = stats.bavail * stats.bsize;
    } catch {
      // The directory is not there (yet) or not readable: nothing to say about its disk.
      this.free = undefined;
    }
    this.lastCheck = Date.now();
    const low = this.free !== undefined && this.free < this.minFreeBytes;
    if (low !== this.low) {
      this.low = low;
      this.onChange(low, this.free ?? 0);
    }
    return low;
  }
}

export class StorageFullError extends Error {
  readonly code = 'storage_full';
  constructor(freeBytes: number | undefined) {
    super(`The data directory's disk is (nearly) full (${freeBytes ?? 0} bytes free); writes are refused`);
  }
}
