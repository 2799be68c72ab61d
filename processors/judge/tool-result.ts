/** Did a tool call succeed? Read from the tool result's text, exit codes first. */

const EXIT_CODE = /\b(?:exit(?:ed)?(?:\s+with)?[\s_-]*(?:code|status)?|return[\s_-]?code|returncode)["']?\s*[:=]?\s*(-?\d+)\b/gi;
const ERROR_FLAG = /["']?(?:is_?error|isError)["']?\s*[:=]\s*true\b|["']?(?:ok|success)["']?\s*[:=]\s*false\b/i;
/** Phrases that say "no error" and must not count as one. */
const NOT_ERRORS =
  /\b(?:0|no|zero|without)\s+(?:errors?|failures?|exceptions?)\b|["']?errors?["']?\s*[:=]\s*(?:null|none|\[\s*\]|0|false)\b/gi;
const ERROR_WORDS =
  /\b(?:error|errors|exception|traceback|failed|failure|fatal|panic|segmentation fault|command not found|no such file or directory|permission denied)\b/i;

export type ToolOutcome = 'success' | 'error';

/**
 * An explicit exit/return code decides (0 = success); otherwise an error flag (`"is_error": true`,
 * `"ok": false`) or an error word ("error", "Traceback", "failed", …) means error. Phrases like
 * "0 errors" or `"error": null` are not errors.
 */
export function classifyToolResult(content: string): ToolOutcome {
  const codes = [...content.matchAll(EXIT_CODE)].map((m) => Number(m[1]));
  if (codes.length > 0) return codes.every((c) => c === 0) ? 'success' : 'error';
  if (ERROR_FLAG.test(content)) return 'error';
  return ERROR_WORDS.test(content.replace(NOT_ERRORS, ' ')) ? 'error' : 'success';
}
