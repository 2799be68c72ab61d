/**
 * The pretraining corpus of the built-in model: short, templated chat exchanges in the chat
 * template, generated from a seed (nothing is downloaded).
 *
 * A reply is `[greeting] [opener] body [more] [question] [emoji]`. In a plain exchange each part
 * is drawn independently, so the base model shows every style some of the time (the base rates
 * below): that is the variation RL reinforces. In an instructed exchange an instruction — a system
 * prompt, or a hint appended to the user message exactly as OPD's teacher prompt is
 * (`\n\n[user's hint / instruction]\n…`) — fixes one or two parts, and the reply obeys it. The
 * frozen base model then answers hints, which is what makes on-policy distillation informative.
 */
import { mulberry32 } from '../core/index.ts';
import type { ChatMessage } from '../policy/index.ts';

/** One question topic: ways to ask it, a short answer, and one more sentence for a long answer. */
export interface Topic {
  asks: string[];
  body: string;
  more: string;
}

/** Ways to ask, the short answer, one more sentence. */
const topic = (asks: string[], body: string, more: string): Topic => ({ asks, body, more });

export const TOPICS: Topic[] = [
  topic(['how do I make tea?', 'tips for brewing tea?'], 'Steep the tea in hot water for 3 minutes.', 'Green tea likes cooler water.'),
  topic(['how do I boil an egg?', 'how long to boil eggs?'], 'Boil the egg for about 8 minutes.', 'Cool it in cold water after.'),
  topic(['how can I sleep better?', 'tips for better sleep?'], 'Go to bed at the same time each night.', 'Keep the room dark and cool.'),
  topic(['how do I learn to code?', 'where do I start coding?'], 'Start with small Python projects.', 'Build something you will use.'),
  topic(['how do I water a cactus?', 'how often to water cacti?'], 'Water a cactus about once a month.', 'Let the soil dry out first.'),
  topic(['how do I save money?', 'tips to save money?'], 'Set aside a part of each paycheck.', 'Track what you spend each week.'),
  topic(['how do I start running?', 'tips for a new runner?'], 'Start with short, easy runs.', 'Add a few minutes each week.'),
  topic(['how do I cook rice?', 'what is the rice ratio?'], 'Use two cups of water per cup of rice.', 'Let it rest for five minutes.'),
  topic(['how do I focus better?', 'tips to stay focused?'], 'Work in 25 minute blocks.', 'Put your phone in another room.'),
  topic(['how do I clean a pan?', 'how to clean a burnt pan?'], 'Soak the pan in warm soapy water.', 'Baking soda helps with stains.'),
  topic(['how do I learn Spanish?', 'tips for learning Spanish?'], 'Practice a little every day.', 'Watch shows with subtitles.'),
  topic(['how do I write a resume?', 'tips for my resume?'], 'Keep your resume to one page.', 'List results, not just duties.'),
  topic(['what is a black hole?', 'explain black holes?'], 'It is a place where gravity traps light.', 'It forms when a big star dies.'),
  topic(['why is the sky blue?', 'what makes the sky blue?'], 'Air scatters blue light the most.', 'Sunsets are red for the same reason.'),
  topic(['what is a prime number?', 'define a prime number?'], 'It has no divisors but 1 and itself.', 'Seven and eleven are primes.'),
  topic(['how do plants grow?', 'what do plants need?'], 'Plants need light, water and soil.', 'They turn light into sugar.'),
  topic(['how do I make coffee?', 'tips for good coffee?'], 'Use fresh beans and hot water.', 'Grind them just before brewing.'),
  topic(['how do I stretch?', 'a simple stretch routine?'], 'Hold each stretch for 30 seconds.', 'Breathe slowly as you hold it.'),
  topic(['how do I bake bread?', 'tips for baking bread?'], 'Let the dough rise for an hour.', 'Bake it until the crust is brown.'),
  topic(['how do I fix a flat tire?', 'my bike tire is flat?'], 'Patch the tube or put in a new one.', 'Check the tire for sharp bits.'),
  topic(['what is gravity?', 'explain gravity?'], 'Gravity pulls masses toward each other.', 'It keeps the moon in orbit.'),
  topic(['how do I meditate?', 'tips for meditation?'], 'Sit still and follow your breath.', 'Start with five minutes a day.'),
  topic(['how do I grow tomatoes?', 'tips for tomato plants?'], 'Give tomatoes full sun and water.', 'Tie them to a stake as they grow.'),
  topic(
    ['how do I learn guitar?', 'tips for a guitar beginner?'],
    'Learn three chords and practice daily.',
    'Play songs you already love.',
  ),
  topic(['what is a noun?', 'define a noun?'], 'A noun names a person, place or thing.', 'Dog and city are nouns.'),
  topic(['how do I remove a stain?', 'how to clean a stain?'], 'Blot the stain with cold water.', 'Do not rub it into the cloth.'),
  topic(['how do I make pasta?', 'how long to cook pasta?'], 'Boil pasta in salted water.', 'Taste it after eight minutes.'),
  topic(['how do I pack light?', 'tips for packing light?'], 'Pack clothes that all match.', 'Roll them to save space.'),
  topic(['what is photosynthesis?', 'explain photosynthesis?'], 'Plants make food from light.', 'They give off oxygen too.'),
  topic(['how do I stay calm?', 'tips to calm down?'], 'Take a few slow, deep breaths.', 'Count to four on each breath.'),
  topic(['how do I read faster?', 'tips for faster reading?'], 'Read in chunks, not word by word.', 'Skim the headings first.'),
  topic(['how do I make friends?', 'tips to meet people?'], 'Join a club that you enjoy.', 'Ask people about themselves.'),
  topic(['what is an atom?', 'explain atoms?'], 'An atom is a tiny unit of matter.', 'It has a nucleus and electrons.'),
  topic(['how do I draw a face?', 'tips for drawing faces?'], 'Start with an oval and guide lines.', 'Eyes sit halfway down the head.'),
  topic(['how do I wake up early?', 'tips for waking early?'], 'Move your bedtime earlier bit by bit.', 'Get light soon after you wake.'),
  topic(['how do I cook an omelet?', 'tips for an omelet?'], 'Whisk two eggs and cook on low heat.', 'Fold it when the top is set.'),
];

/** The 16 names of the corpus the shipped base was pretrained on ("Sam" among them). */
export const SHIPPED_NAMES = [
  'Sam',
  'Alex',
  'Maya',
  'Leo',
  'Nina',
  'Omar',
  'Ruth',
  'Ivan',
  'Zoe',
  'Ben',
  'Lia',
  'Tom',
  'Ana',
  'Raj',
  'Eve',
  'Kai',
];

/**
 * Names kept OUT of the many-names corpus: "Sam" is the eval's named-sam persona, the others are unseen names
 * for measuring whether a model copies the name from the prompt (`eval/name-copy.ts`).
 */
export const HELD_OUT_NAMES = ['Sam', 'Priya', 'Jonas', 'Greta', 'Hugo', 'Mei', 'Tariq', 'Olga', 'Femi', 'Lucia', 'Dmitri', 'Ines'];

/** Common real names of the corpus (none of `HELD_OUT_NAMES`). */
export const REAL_NAMES = [
  ...['Alex', 'Maya', 'Leo', 'Nina', 'Omar', 'Ruth', 'Ivan', 'Zoe', 'Ben', 'Lia', 'Tom', 'Ana', 'Raj', 'Eve', 'Kai', 'Emma'],
  ...['Noah', 'Olivia', 'Liam', 'Ava', 'Lucas', 'Mia', 'Ethan', 'Chloe', 'James', 'Grace', 'Daniel', 'Sofia', 'Adam', 'Lily', 'David'],
  ...['Hannah', 'Jack', 'Ella', 'Ryan', 'Sara', 'Max', 'Julia', 'Oscar', 'Laura', 'Felix', 'Clara', 'Paul', 'Anna', 'Mark', 'Rosa'],
  ...['Peter', 'Elena', 'Carlos', 'Marta', 'Diego', 'Lena', 'Yuki', 'Kenji', 'Aiko', 'Hiro', 'Wei', 'Lin', 'Chen', 'Jin', 'Amir'],
  ...['Fatima', 'Ali', 'Layla', 'Yusuf', 'Zara', 'Kofi', 'Amara', 'Tunde', 'Nia', 'Sipho', 'Arjun', 'Ravi', 'Anika', 'Dev', 'Nora'],
  ...['Erik', 'Freya', 'Lars', 'Astrid', 'Pierre', 'Cleo', 'Marco', 'Giulia', 'Pablo', 'Lucy', 'Owen', 'Ruby', 'Finn', 'Ivy', 'Sean'],
  ...['Tessa', 'Victor', 'Hana', 'Boris', 'Vera', 'Igor', 'Kira', 'Omid', 'Leila', 'Joel', 'Abby', 'Carl', 'Dana', 'Eli', 'Faye'],
  ...['Gus', 'Holly', 'Ian', 'Jade', 'Kurt', 'Lola', 'Milo', 'Nell', 'Otto', 'Pia', 'Quinn', 'Rex', 'Tara', 'Uma', 'Wade', 'Xena'],
];

const ONSETS = ['b', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z', 'br', 'ch', 'sh', 'tr'];
const VOWELS = ['a', 'e', 'i', 'o', 'u'];
const CODAS = ['', '', '', 'n', 'r', 'l', 's'];

/**
 * Pronounceable two-syllable names from syllables (onset + vowel, twice, an optional final
 * consonant), deterministic: "Bala", "Tromin", … — thousands, so a model cannot memorise them.
 */
export function generatedName(rand: () => number): string {
  const syl = (): string => pick(rand, ONSETS) + pick(rand, VOWELS);
  const name = syl() + syl() + pick(rand, CODAS);
  return name.charAt(0).toUpperCase() + name.slice(1);
}

const HELD_OUT = new Set(HELD_OUT_NAMES.map((n) => n.toLowerCase()));

/**
 * A user's name: half a common real name, half a generated one, never one of `HELD_OUT_NAMES`.
 * With this many names, copying the name from the prompt is the only way to predict a greeting.
 */
export function drawName(rand: () => number): string {
  for (;;) {
    const name = rand() < 0.5 ? pick(rand, REAL_NAMES) : generatedName(rand);
    if (!HELD_OUT.has(name.toLowerCase())) return name;
  }
}

const CASUAL_OPENERS = ['Sure! ', 'Oh, easy! ', 'Hey! ', 'Good one! ', ''];
const FORMAL_OPENERS = ['Certainly. ', 'Of course. ', 'Good question. '];
const QUESTIONS = [' Does that help?', ' Anything else?', ' Want more tips?', ' Shall I explain more?'];
const EMOJI = [' 😊', ' 🙂', ' 👍', ' ✨', ' 🌟'];
/** Words that make a reply casual (a formal reply has none of them and no "!"). */
export const CASUAL_MARKERS = /!|\b(?:hey|oh|easy|good one|gonna|yeah|cool)\b/i;

/** Hint / instruction phrasings per property, including what the embedded judge derives from a correction. */
export const INSTRUCTIONS = {
  short: ['Keep it short.', 'Be brief.', 'Keep the answer short. Keep it short, please.', 'Keep the answer short.', 'One sentence only.'],
  question: [
    'End with a question.',
    "You didn't end with a question. End with a question.",
    'Always end with a question.',
    'Finish with a question.',
  ],
  greet: ['Greet me by name.', 'You forgot to greet me by name. Greet me by name.', 'Say hi to me by name.', 'Use my name.'],
  noEmoji: ['No emoji.', "Don't use emoji.", 'Please no emoji.', 'Do not add emoji.'],
  formal: ['Be formal.', 'Use a more formal tone. Be formal.', 'Use a formal tone.', 'Be polite and formal.'],
} as const;
export type Property = keyof typeof INSTRUCTIONS;
export const PROPERTIES = Object.keys(INSTRUCTIONS) as Property[];

/** Probability that a plain reply has each property (measured rates: `corpusStats`). */
export const BASE_RATES = { short: 0.35, question: 0.3, greet: 0.3, noEmoji: 0.35, formal: 0.3 };

export const HINT_HEADER = "\n\n[user's hint / instruction]\n";

export interface ReplyStyle {
  short: boolean;
  question: boolean;
  greet: boolean;
  noEmoji: boolean;
  formal: boolean;
}

export interface Exchange {
  messages: ChatMessage[];
  reply: string;
  style: ReplyStyle;
  /** Properties an instruction forced (empty for a plain exchange). */
  instructed: Property[];
}

const pick = <T>(rand: () => number, list: readonly T[]): T => list[Math.floor(rand() * list.length)];

/** The reply text of a topic in a style. */
export function renderReply(topic: Topic, style: ReplyStyle, name: string | null, rand: () => number): string {
  let out = '';
  if (style.greet && name) out += style.formal ? `Hello ${name}. ` : `Hi ${name}! `;
  out += style.formal ? pick(rand, FORMAL_OPENERS) : pick(rand, CASUAL_OPENERS);
  out += topic.body;
  if (!style.short) out += ' ' + topic.more;
  if (style.question) out += pick(rand, QUESTIONS);
  if (!style.noEmoji) out += pick(rand, EMOJI);
  return out;
}

/** The user message: optional "NAME here." and one of the topic's asks, sometimes capitalized. */
export function userMessage(topic: Topic, name: string | null, rand: () => number): string {
  let ask = pick(rand, topic.asks);
  if (rand() < 0.5) ask = ask.charAt(0).toUpperCase() + ask.slice(1);
  return name ? `${name} here. ${ask}` : ask;
}

export interface CorpusOptions {
  /** @default 0 */
  seed?: number;
  /** Share of exchanges with an instruction. @default 0.4 */
  instructedShare?: number;
  /** Topics to draw from. @default TOPICS */
  topics?: Topic[];
  /**
   * Where users' names come from: `shipped`, the 16 names of the corpus the shipped base was
   * pretrained on (so `turnstream pretrain` rebuilds it); `many`, thousands of real and
   * generated names, never one of `HELD_OUT_NAMES`, so that a greeting can only be predicted by
   * copying the name from the prompt. @default 'shipped'
   */
  names?: 'shipped' | 'many';
  /**
   * Share of extra "Greet me by name." exchanges (a name-copy drill for a pretraining phase; the
   * other exchanges keep their proportions). @default 0
   */
  greetDrillShare?: number;
}

/** An endless, seeded stream of exchanges. */
export function* corpus(opts: CorpusOptions = {}): Generator<Exchange> {
  const rand = mulberry32(opts.seed ?? 0);
  const topics = opts.topics ?? TOPICS;
  const share = opts.instructedShare ?? 0.4;
  for (;;) {
    const topic = pick(rand, topics);
    const instructed: Property[] = [];
    if (opts.greetDrillShare && rand() < opts.greetDrillShare) instructed.push('greet');
    else if (rand() < share) {
      instructed.push(pick(rand, PROPERTIES));
      if (rand() < 0.25) {
        const second = pick(rand, PROPERTIES);
        if (!instructed.includes(second)) instructed.push(second);
      }
    }
    const name = instructed.includes('greet') || rand() < 0.4 ? (opts.names === 'many' ? drawName(rand) : pick(rand, SHIPPED_NAMES)) : null;
    const style: ReplyStyle = {
      short: rand() < BASE_RATES.short,
      question: rand() < BASE_RATES.question,
      greet: name !== null && rand() < BASE_RATES.greet,
      noEmoji: rand() < BASE_RATES.noEmoji,
      formal: rand() < BASE_RATES.formal,
    };
    for (const p of instructed) style[p] = true;
    let user = userMessage(topic, name, rand);
    const messages: ChatMessage[] = [];
    if (instructed.length > 0) {
      const text = instructed.map((p) => pick(rand, INSTRUCTIONS[p])).join(' ');
      // Half as a system prompt, half as OPD's hint format.
      if (rand() < 0.5) messages.push({ role: 'system', content: text });
      else user += HINT_HEADER + text;
    }
    messages.push({ role: 'user', content: user });
    yield { messages, reply: renderReply(topic, style, name, rand), style, instructed };
  }
}
