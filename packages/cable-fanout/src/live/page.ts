// The run's live page (--live): the live feed's merged periods drawn by report.html's own page code,
// served on loopback behind a random token while the run goes, then the final report.html itself.
/** Where the live page listens: port 0 takes any free port; host is 127.0.0.1 unless --live-host. */
export interface LivePageAddress {
  port: number;
  host: string;
}

export const DEFAULT_LIVE_HOST = "127.0.0.1";
