// parse-prometheus-text-format 1.1.1 ships no types: the prom2json shape it returns.
declare module "parse-prometheus-text-format" {
  interface PrometheusFamily {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    metrics: Array<{ value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; quantiles?: Record<string, string>; count?: string; sum?: string }>;
  }
  export default function parsePrometheusTextFormat(text: string): PrometheusFamily[];
}
