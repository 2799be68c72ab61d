import type { Sample, Turn } from './types.ts';

/**
 * The sampling distribution a turn's tokens were drawn from, as a Sample carries it (the trainer
 * scores the tokens under the same temperature and top-p nucleus), and the length of its task. A turn that names none (an
 * upstream that used its own defaults) is taken as drawn at temperature 1 from the whole vocabulary.
 */
export function samplingOf(
  turn: Pick<Turn, 'sampling' | 'promptHeadTokens'>,
): Required<Pick<Sample, 'samplingTemperature' | 'samplingTopP' | 'promptHeadTokens'>> {
  return {
    samplingTemperature: turn.sampling.temperature ?? 1,
    samplingTopP: turn.sampling.topP ?? 1,
    promptHeadTokens: turn.promptHeadTokens ?? 0,
  };
}
