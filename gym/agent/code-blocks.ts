/**
 * Actions written as fenced code blocks in a reply (```` ```bash ````, ```` ```sh ````,
 * ```` ```python ````), as mini-swe-agent takes them: base SmolLM2-135M, offered tools, answers with
 * a code block, never a tool call. A block without a language, or in another language, is part of
 * the answer, not an action.
 */

/** The language an action block runs in: bash and sh run with the shell tool, python with the code tool. */
export type BlockLanguage = 'bash' | 'python';

/** One fenced block that is an action. */
export interface CodeBlock {
  language: BlockLanguage;
  /** The block's text, without the fences (a shell transcript's `$ ` prompts removed). */
  code: string;
  /** The block was not closed: the reply ended inside it. */
  unclosed: boolean;
}

/** Info strings (lower-cased first word) that make a block an action. */
const LANGUAGES: Readonly<Record<string, BlockLanguage>> = {
  bash: 'bash',
  sh: 'bash',
  shell: 'bash',
  console: 'bash',
  python: 'python',
  python3: 'python',
  py: 'python',
};

const OPEN = /^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;

/** A shell transcript (`$ ls`) as the commands it shows; other code as it is. */
function unprompt(code: string): string {
  const lines = code.split('\n');
  const filled = lines.filter((l) => l.trim() !== '');
  if (filled.length === 0 || !filled.every((l) => /^\$ /.test(l))) return code;
  return lines.map((l) => l.replace(/^\$ /, '')).join('\n');
}

/**
 * The action blocks of a reply, in order (pure). A block left open at the end of the reply counts
 * only with `acceptUnclosed` (a reply that ended by itself, not one cut at max_tokens).
 */
export function parseCodeBlocks(text: string, options: { acceptUnclosed?: boolean } = {}): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = text.split(/\r?\n/);
  let open: { fence: string; info: string; body: string[] } | null = null;
  for (const line of lines) {
    if (open === null) {
      const m = OPEN.exec(line);
      if (m) open = { fence: m[1], info: m[2].toLowerCase(), body: [] };
      continue;
    }
    // A closing fence: the opening's character, at least as many, nothing else on the line.
    const trimmed = line.trim();
    if (/^(`+|~+)$/.test(trimmed) && trimmed[0] === open.fence[0] && trimmed.length >= open.fence.length) {
      push(open, false);
      open = null;
    } else {
      open.body.push(line);
    }
  }
  if (open !== null && options.acceptUnclosed) push(open, true);
  return blocks;

  function push(b: { info: string; body: string[] }, unclosed: boolean): void {
    const language = LANGUAGES[b.info];
    const code = unprompt(b.body.join('\n'));
    if (language && code.trim() !== '') blocks.push({ language, code, unclosed });
  }
}
