/**
 * The local model's reading of text (LocalModel.ts): content words and their stems, sentences, prompt
 * sections, and the texts it writes for the team rather than the contact: the handoff summary and an
 * eval's judgement.
 */
import type { Prompt } from "@effect/ai"

const STOP = new Set(
  ("a an and are as at be but by can could do does for from has have how i if in is it its me my of on or our so " +
    "that the their them then there these they this to us was we were what when where which who why will with would " +
    "you your yes no not please thanks thank hi hello hey just about any some want need like get").split(" ")
)

export const words = (text: string) =>
  text.toLowerCase().normalize("NFKD").replace(/[^\p{L}\p{N}\s]/gu, " ").split(/\s+/).filter(Boolean)
/** Content words, cut to a 5-letter stem so "purchase" meets "purchasing". */
export const stems = (text: string) =>
  new Set(words(text).filter((w) => w.length > 2 && !STOP.has(w)).map((w) => w.slice(0, 5)))

export const textOf = (message: Prompt.Message): string => {
  if (typeof message.content === "string") return message.content
  return message.content.map((p: any) => (p.type === "text" ? p.text : "")).join(" ")
}

/**
 * The marker of a file line (FileParts.ts) at a line's start: `[image: n]`, `[voice note n]:`, `[voice note n: not
 * transcribed]`, `[document n]`, `[video: n]`. What follows it (a description, a transcript, a document's text) is
 * taken as the contact's words.
 */
const FILE_MARKER = /^\[(?:image: |voice note |document:? |video: |file: )[^\]\n]*\]:? ?/gm

/** A contact's message as words: its text with the file lines' markers taken out. */
export const saidIn = (message: Prompt.Message) => textOf(message).replace(FILE_MARKER, "")

/** What the local model says of an image it was given no description of, or a voice note without transcript. */
export const CANNOT_SEE = "I can't see images, could you describe it in words?"
export const CANNOT_HEAR = "I can't listen to voice notes, could you write your message?"

/** The local model's notice for what a contact's message carries that it cannot read (null: it reads it all). */
export const unreadable = (message: Prompt.Message): string | null => {
  const text = textOf(message)
  const image = /^\[image: [^\]\n]*\]$/m.test(text) ||
    (typeof message.content !== "string" &&
      message.content.some((p: any) => p.type === "file" && String(p.mediaType).startsWith("image/")))
  const audio = /^\[voice note [^\]\n]*: not transcribed\]$/m.test(text)
  return [image ? CANNOT_SEE : null, audio ? CANNOT_HEAR : null].filter((s) => s !== null).join(" ") || null
}

export const sentences = (text: string) =>
  text.split(/(?<=[.!?])\s+|\n+/).map((s) => s.replace(/^[-*#\s]+/, "").trim()).filter((s) =>
    s.length > 0 && !s.startsWith("[task:")
  )

/** The share of a condition's content words the contact's recent messages contain. */
export const conditionMet = (condition: string, contactText: string) => {
  const wanted = stems(condition)
  if (wanted.size === 0) return 0
  const said = stems(contactText)
  let hits = 0
  for (const w of wanted) if (said.has(w)) hits++
  return hits / wanted.size
}

export const sectionOf = (system: string, title: string) =>
  system.match(new RegExp(`^## ${title}\\n([\\s\\S]*?)(?=\\n##? |\\n\\n[^#]|$(?![\\s\\S]))`, "m"))?.[1] ?? ""

/** The contact asks for a person, in so many words. */
export const ASKS_FOR_PERSON =
  /\b(human|real person|a person|someone (real|from)|an? (agent|operator|representative)|speak to|talk to|talk with|customer service)\b/i

/** What the local model says when the knowledge has nothing on the contact's words. */
export const NOTHING_FOUND = "I don't have that information here."

/** Whether a reply answers a question: not the no-answer line, and shares a content word with it. */
const answers = (reply: string, question: string) => {
  if (reply.includes(NOTHING_FOUND)) return false
  const said = stems(reply)
  return [...stems(question)].some((w) => said.has(w))
}

/**
 * Three lines for the operator, from the whole conversation: what the contact wants (the first question
 * no later reply answered, else their latest request), what the agent answered, and what is still open.
 */
export const summaryText = (messages: ReadonlyArray<Prompt.Message>) => {
  const said = messages.filter((m) => m.role === "user" || m.role === "assistant").map((m) => ({
    role: m.role,
    text: saidIn(m).trim()
  }))
    .filter((m) => m.text !== "")
  const questions = said.flatMap((m, i) =>
    m.role === "user"
      ? sentences(m.text).filter((s) => s.endsWith("?") && !ASKS_FOR_PERSON.test(s)).map((q) => ({ q, i }))
      : []
  )
  const open = questions.filter(({ i, q }) =>
    !said.slice(i + 1).some((m) => m.role === "assistant" && answers(m.text, q))
  ).map(({ q }) => q)
  const requests = said.filter((m) => m.role === "user").flatMap((m) => sentences(m.text)).filter((s) =>
    stems(s).size > 0
  )
  const latest = requests.filter((s) => !ASKS_FOR_PERSON.test(s)).at(-1) ?? requests.at(-1)
  // what the agent answered: its replies that answer one of the contact's questions (not a bridge or a greeting)
  const answered = said.filter((m) => m.role === "assistant" && questions.some(({ q }) => answers(m.text, q)))
    .map((m) => sentences(m.text)[0] ?? m.text)
  const cut = (t: string) => (t.length > 300 ? `${t.slice(0, 299)}…` : t)
  return [
    `Wants: ${cut(open[0] ?? latest ?? "nothing said yet")}`,
    `Tried: ${cut(answered.at(-1) ?? "no answer yet")}`,
    `Open: ${cut(open.join(" ") || "none")}`
  ].join("\n")
}

/** The scripted judgement of a criterion over the transcript's `Agent:` lines. */
export const judgement = (criterion: string, transcript: string) => {
  const agent = transcript.split("\n").filter((l) => l.startsWith("Agent: ")).map((l) => l.slice(7)).join("\n")
    .toLowerCase()
  const phrases = [...criterion.matchAll(/"([^"]+)"/g)].map((m) => m[1]!)
  if (phrases.length === 0) {
    const share = conditionMet(criterion, agent)
    return share >= 0.6
      ? `PASS\nThe agent's messages say ${Math.round(share * 100)}% of the criterion's words.`
      : `FAIL\nThe agent's messages say only ${Math.round(share * 100)}% of the criterion's words.`
  }
  let from = 0
  for (const phrase of phrases) {
    const at = agent.indexOf(phrase.toLowerCase(), from)
    if (at < 0) {
      return agent.includes(phrase.toLowerCase())
        ? `FAIL\nThe agent says "${phrase}" too early: not after what comes before it in the criterion.`
        : `FAIL\nThe agent never says "${phrase}".`
    }
    from = at + phrase.length
  }
  return `PASS\nThe agent says ${phrases.map((p) => `"${p}"`).join(", then ")}.`
}
