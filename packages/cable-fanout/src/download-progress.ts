// What `collect` says while it downloads: a run of 500 tasks a region leaves tens of thousands of
// files, minutes of downloading that would otherwise pass in silence. One line at most every few
// seconds (a CI log stays short), nothing at all for a download done before the first.

/** How often a line may be written. */
export const PROGRESS_EVERY_MS = 5_000;

export class DownloadProgress {
  private files = 0;
  private bytes = 0;
  private regionsDone = 0;
  private last: number;
  private printed = false;

  constructor(
    private readonly regions: number,
    private readonly write: (line: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.last = now();
  }

  file(bytes: number): void {
    this.files++;
    this.bytes += bytes;
    this.maybeWrite();
  }

  regionDone(): void {
    this.regionsDone++;
    this.maybeWrite();
  }

  /** The totals, once every region is done, when a line was written before (else the download was quick enough to say nothing). */
  finish(): void {
    if (this.printed) this.write(this.line());
  }

  private maybeWrite(): void {
    if (this.now() - this.last < PROGRESS_EVERY_MS) return;
    this.last = this.now();
    this.printed = true;
    this.write(this.line());
  }

  private line(): string {
    const mb = (this.bytes / 1_000_000).toLocaleString("en-US", { maximumFractionDigits: 1 });
    return `collect: ${this.files.toLocaleString("en-US")} files, ${mb} MB downloaded, ${this.regionsDone} of ${this.regions} region(s) done`;
  }
}
