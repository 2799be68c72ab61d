/**
 * The training run per version, as TRL and verl users read it: what the learner reported when it
 * published each version of a model (the weights table: loss, reward, KL, clip fraction, samples,
 * tokens, step time) and how far the rollout engine's log-probs were from the trainer's on that
 * step's samples (mean |Δ log-prob|, the k3 KL estimate, the truncated importance weights).
 */
import { sqlString, type AnalyticsStore } from '../../warehouse/index.ts';
import { int, ints, num, r4 } from './scope.ts';

/** A model that has published versions or rollouts, newest activity first. */
export interface TrainingModel {
  model_id: string;
  /** Versions published (weights rows). */
  versions: number;
  /** Verifier rewards of its rollouts (gym). */
  rollouts: number;
  last_ms: number;
}

export interface VersionTraining {
  version: number;
  /** -1 for a first version. */
  parent_version: number;
  published_at_ms: number;
  loss: number | null;
  mean_reward: number | null;
  /** KL to the reference (base) policy. */
  kl: number | null;
  clip_fraction: number | null;
  samples: number;
  tokens: number;
  /** Learner steps in this version. */
  steps: number;
  /** Samples dropped as too stale. */
  dropped_stale: number;
  /** Mean |Δ log-prob| between the rollout engine and the trainer (`metrics.logprobDrift`). */
  logprob_drift: number | null;
  /** k3 estimate of KL(rollout ‖ trainer) (`metrics.mismatchKl`). */
  mismatch_kl: number | null;
  /** Mean truncated importance weight (`metrics.tisMean`; 1 = no mismatch). */
  tis_mean: number | null;
  /** Share of tokens whose importance weight hit the cap (`metrics.tisTruncated`). */
  tis_truncated: number | null;
  /** Wall time of the step that made the version, in s (`metrics.stepSeconds`; 0 when not reported). */
  step_seconds: number | null;
}

/** Every model with versions or rollouts, the most recently active first. */
export async function trainingModels(store: AnalyticsStore, opts: { limit?: number } = {}): Promise<TrainingModel[]> {
  const t = store.tables;
  const rows = await store.rows<{ m: string; kind: string; n: unknown; last: unknown }>(`
    SELECT model_id AS m, 'weights' AS kind, count() AS n, max(created_at_ms) AS last FROM ${t.weights} FINAL GROUP BY m
    UNION ALL SELECT policy_model_id AS m, 'rewards' AS kind, count() AS n, max(created_at_ms) AS last
      FROM ${t.rewards} FINAL WHERE policy_model_id != '' GROUP BY m`);
  const models = new Map<string, TrainingModel>();
  for (const r of rows) {
    const m = models.get(r.m) ?? { model_id: r.m, versions: 0, rollouts: 0, last_ms: 0 };
    if (r.kind === 'weights') m.versions = int(r.n);
    else m.rollouts = int(r.n);
    m.last_ms = Math.max(m.last_ms, int(r.last));
    models.set(r.m, m);
  }
  return [...models.values()]
    .sort((a, b) => b.last_ms - a.last_ms || a.model_id.localeCompare(b.model_id))
    .slice(0, Math.max(1, Math.min(1000, opts.limit ?? 100)));
}

/** The published versions of one model, oldest first. */
export async function trainingByVersion(store: AnalyticsStore, modelId: string): Promise<VersionTraining[]> {
  const rows = await store.rows<Record<string, unknown>>(`
    SELECT version, parent_version, created_at_ms, loss, mean_reward, kl, clip_fraction, samples, tokens, steps, dropped_stale,
      logprob_drift, mismatch_kl, tis_mean, tis_truncated, step_seconds
    FROM ${store.tables.weights} FINAL WHERE model_id = ${sqlString(modelId)} ORDER BY version`);
  return rows.map((r) => ({
    version: int(r.version),
    parent_version: Number(r.parent_version ?? -1),
    published_at_ms: int(r.created_at_ms),
    loss: r4(num(r.loss)),
    mean_reward: r4(num(r.mean_reward)),
    kl: r6(num(r.kl)),
    clip_fraction: r4(num(r.clip_fraction)),
    ...ints(r, ['samples', 'tokens', 'steps', 'dropped_stale']),
    logprob_drift: r6(num(r.logprob_drift)),
    mismatch_kl: r6(num(r.mismatch_kl)),
    tis_mean: r4(num(r.tis_mean)),
    tis_truncated: r4(num(r.tis_truncated)),
    step_seconds: r4(num(r.step_seconds)),
  }));
}

/** KL and log-prob gaps are often below 1e-4: six decimals keep them. */
const r6 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1e6) / 1e6);
