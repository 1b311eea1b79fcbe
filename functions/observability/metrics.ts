import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { readSetting, SETTINGS } from '../contract/environment';
import { type LedgerMetricName, METRICS_NAMESPACE } from '../contract/metrics';

/** What the engine records; tests pass an in-memory implementation. */
export interface LedgerMetrics {
  /** Adds `value` to a counter for a tool (and an outcome, for reconciliations). */
  count(name: LedgerMetricName, tool: string, value?: number, outcome?: string): void;
  /** Records a gauge-like value for the whole service (unresolved operations). */
  gauge(name: LedgerMetricName, value: number): void;
  /** Records a latency, ms. */
  latency(name: LedgerMetricName, tool: string, ms: number): void;
  /** Writes what was recorded (EMF to stdout in Lambda). */
  flush(): void;
}

/**
 * EMF metrics through Powertools. Each data point is emitted twice: once with the `tool` dimension
 * (for dashboards) and once with the service dimension alone (what alarms use), because CloudWatch
 * cannot sum across dimension values in an alarm without metric math.
 */
export class PowertoolsLedgerMetrics implements LedgerMetrics {
  private readonly metrics: Metrics;
  /**
   * Metrics are off (`POWERTOOLS_METRICS_DISABLED`, local mode's default): nothing would be printed,
   * so nothing is recorded. Each data point with a dimension builds a Powertools single-metric object,
   * a few percent of local mode's time when every one of them was thrown away.
   */
  private readonly disabled: boolean;
  /** Whether anything was recorded since the last flush (Powertools warns on empty publishes). */
  private recorded = false;

  constructor(metrics?: Metrics) {
    this.metrics =
      metrics ??
      new Metrics({
        namespace: readSetting(process.env, SETTINGS.metricsNamespace) ?? METRICS_NAMESPACE,
        serviceName: readSetting(process.env, SETTINGS.serviceName),
      });
    // Powertools' own reading of its settings (declared protected, public at run time).
    this.disabled = (this.metrics as unknown as { isDisabled(): boolean }).isDisabled();
  }

  count(name: LedgerMetricName, tool: string, value = 1, outcome?: string): void {
    if (this.disabled) return;
    this.recorded = true;
    this.metrics.addMetric(name, MetricUnit.Count, value);
    const single = this.metrics.singleMetric();
    single.addDimension('tool', tool);
    if (outcome !== undefined) single.addDimension('outcome', outcome);
    single.addMetric(name, MetricUnit.Count, value);
  }

  gauge(name: LedgerMetricName, value: number): void {
    if (this.disabled) return;
    this.recorded = true;
    this.metrics.addMetric(name, MetricUnit.Count, value);
  }

  latency(name: LedgerMetricName, tool: string, ms: number): void {
    if (this.disabled) return;
    this.recorded = true;
    this.metrics.addMetric(name, MetricUnit.Milliseconds, ms);
    const single = this.metrics.singleMetric();
    single.addDimension('tool', tool);
    single.addMetric(name, MetricUnit.Milliseconds, ms);
  }

  flush(): void {
    if (!this.recorded) return;
    this.recorded = false;
    this.metrics.publishStoredMetrics();
  }
}

/** Metrics kept in memory: for tests and for local mode's summary. */
export class MemoryLedgerMetrics implements LedgerMetrics {
  readonly counts = new Map<string, number>();

  count(name: LedgerMetricName, tool: string, value = 1, outcome?: string): void {
    const key = outcome === undefined ? `${name}|${tool}` : `${name}|${tool}|${outcome}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + value);
    this.counts.set(name, (this.counts.get(name) ?? 0) + value);
  }

  gauge(name: LedgerMetricName, value: number): void {
    this.counts.set(name, value);
  }

  latency(name: LedgerMetricName, _tool: string, ms: number): void {
    this.counts.set(name, ms);
  }

  flush(): void {}

  /** The total of a metric across tools. */
  total(name: LedgerMetricName): number {
    return this.counts.get(name) ?? 0;
  }
}
