/** The group builder's defaults (`GRPO_*` when nothing is set). */
export const GROUP_BUILDER_DEFAULTS = Object.freeze({ normalizeStd: true, batchTimeoutMs: 300_000, retainDoneMs: 3_600_000 });
