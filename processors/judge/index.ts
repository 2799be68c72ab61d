export { parseBoxed, parseHint } from './boxed.ts';
export { majorityVote, selectHint, MIN_HINT_LENGTH } from './majority-vote.ts';
export { prmPrompt, hintPrompt, PRM_SYSTEM_PROMPT, HINT_SYSTEM_PROMPT, type JudgeMessage, type PromptOptions } from './prompts.ts';
export { quote } from './quote.ts';
export { hasEvidence, makeJudgement, type Judge, type JudgeCallOptions, type JudgeMode } from './judge.ts';
export { LlmJudge, createLlmJudge, type LlmJudgeOptions } from './llm-judge.ts';
export { EmbeddedJudge, createEmbeddedJudge, type EmbeddedJudgeOptions } from './embedded-judge.ts';
export { classifyToolResult, type ToolOutcome } from './tool-result.ts';
export { hintFromCorrection, isCorrection, sentimentScore, type SentimentThresholds } from './user-reply.ts';
