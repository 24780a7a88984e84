/**
 * The knowledge bench's deterministic catalogue (fixed seed): product names from word lists, one of 20
 * categories, a 15–40 word description and a unique code, plus the queries.
 *
 * Descriptions: `uniform` (the default) draws every word Zipf-like from one 3,000-word vocabulary, so a
 * description is unrelated to its product. `topical` reads more like a real catalogue: about 40% of a
 * description's words come from its product type's own 60 terms (every kettle talks about kettles), the
 * rest from the same global vocabulary, common words included.
 */

/** mulberry32 */
const rng = (seed: number) => () => {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const random = rng(42)
/** The topics' own stream, so the main one (and with it the uniform catalogue) is what it always was. */
const topicRandom = rng(7)
const pick = <A>(xs: ReadonlyArray<A>) => xs[Math.floor(random() * xs.length)]!

const adjectives =
  ("compact premium classic modern rugged portable heavy-duty lightweight deluxe smart wireless ergonomic " +
    "foldable adjustable eco vintage professional mini ultra silent waterproof rechargeable stainless insulated reusable")
    .split(" ")
const materials =
  ("steel aluminium bamboo oak walnut ceramic glass cotton linen wool leather silicone copper brass carbon " +
    "granite marble nylon canvas titanium").split(" ")
const nouns =
  ("kettle lamp chair desk backpack blender toaster speaker headphones drill mug bottle jacket boots tent " +
    "cushion rug shelf cabinet knife pan skillet grinder monitor keyboard mouse charger router camera tripod bicycle helmet " +
    "scooter stroller crib mattress pillow blanket towel umbrella wallet watch sunglasses thermostat vacuum humidifier " +
    "heater fan planter hose trimmer").split(" ")
const categories = ("kitchen lighting furniture outdoor audio tools apparel footwear bedding bath office computing " +
  "photography cycling baby garden climate travel accessories cleaning").split(" ")

// a few hundred real words first (the frequent ranks), then generated words to 3,000
const common = ("the and with for your this that from our are you can use easy quality design durable perfect home " +
  "daily great comfort clean fits size colour warranty included free shipping return order stock available delivery " +
  "price new best light strong soft handle cover battery power charge hours water resistant dishwasher safe " +
  "machine wash assembly required dimensions weight capacity litres watts volts inch cm kg grams material finish " +
  "matte gloss black white grey blue green red natural wood metal plastic frame base lid seal grip non-slip " +
  "compatible model version set pack piece pair spare replacement part kit accessory care instructions guide " +
  "support help question answer how long does take when will arrive exchange refund policy days within " +
  "customer service contact email phone chat open monday friday hours store pickup local international " +
  "gift card discount code sale offer bundle save subscribe account login password reset track shipment " +
  "damaged missing item replace repair technician install setup manual download app bluetooth wifi pairing " +
  "reset button light indicator blinking error noise smell heat overheating leak crack scratch stain wash " +
  "dry iron fold store travel carry bag case strap zip pocket lining sole lace heel toe width fit true " +
  "small medium large extra organic recycled sustainable vegan certified tested approved energy efficient " +
  "quiet fast slow speed setting timer auto shutoff safety lock child proof indoor outdoor weather uv").split(" ")
const syllables =
  "ka lo mi ne ra su ti vo ze pa dri fen gal hor jun kel mar nor pel quin ros sal tev urn vel wex yar zol".split(" ")
const vocabulary = [...new Set(common)]
while (vocabulary.length < 3000) {
  const w = pick(syllables) + pick(syllables) + (random() < 0.6 ? pick(syllables) : "")
  if (!vocabulary.includes(w)) vocabulary.push(w)
}
// Zipf (s = 1): P(rank r) ∝ 1/r
const cumulative: Array<number> = []
vocabulary.reduce((acc, _, r) => (cumulative.push(acc + 1 / (r + 1)), acc + 1 / (r + 1)), 0)
const zipfWord = () => {
  const x = random() * cumulative[cumulative.length - 1]!
  let lo = 0
  let hi = cumulative.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (cumulative[mid]! < x) lo = mid + 1
    else hi = mid
  }
  return vocabulary[lo]!
}

const TOPIC_TERMS = 60
const TOPICAL_SHARE = 0.4
/** Each product type's terms: drawn from the vocabulary's less common words (ranks 300 and after). */
const topics = new Map(
  nouns.map((noun) => [
    noun,
    Array.from({ length: TOPIC_TERMS }, () => vocabulary[300 + Math.floor(topicRandom() * 2700)]!)
  ])
)
const topicCumulative: Array<number> = []
for (let r = 0, acc = 0; r < TOPIC_TERMS; r++) topicCumulative.push(acc += 1 / (r + 1))
/** Zipf within the product type's terms. */
const topicWord = (noun: string) => {
  const x = random() * topicCumulative[topicCumulative.length - 1]!
  const i = topicCumulative.findIndex((c) => c >= x)
  return topics.get(noun)![i < 0 ? TOPIC_TERMS - 1 : i]!
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)
const skuOf = (i: number) => `SKU-${String(i).padStart(6, "0")}-${"ABCDEFGHJK"[i % 10]}`

export interface Product {
  readonly default_id: string
  readonly name: string
  readonly sku: string
  readonly category: string
  readonly description: string
  readonly price: number
}

export interface Query {
  readonly text: string
  readonly target: number
  readonly code: boolean
}

export type TextKind = "topical" | "uniform"

const templates = [
  (w: string) => `do you have a ${w}`,
  (w: string) => `${w}`,
  (w: string) => `looking for ${w}`,
  (w: string) => `which ${w} is available`,
  (w: string) => `I need a ${w} please`
]

/** `n` products and `queryCount` queries (the last up to 20 of them bare product codes). */
export const generate = (n: number, queryCount: number, text: TextKind = "uniform") => {
  const codeQueries = Math.min(20, queryCount)
  const products: Array<Product> = Array.from({ length: n }, (_, i) => {
    const length = 15 + Math.floor(random() * 26)
    if (text === "uniform") {
      const description = cap(Array.from({ length }, zipfWord).join(" ")) + "."
      return {
        default_id: `p${i}`,
        name: `${cap(pick(adjectives))} ${pick(materials)} ${pick(nouns)}`,
        sku: skuOf(i),
        category: pick(categories),
        description,
        price: Math.round(random() * 50000) / 100
      }
    }
    const noun = pick(nouns)
    const description =
      cap(Array.from({ length }, () => (random() < TOPICAL_SHARE ? topicWord(noun) : zipfWord())).join(" ")) + "."
    return {
      default_id: `p${i}`,
      name: `${cap(pick(adjectives))} ${pick(materials)} ${noun}`,
      sku: skuOf(i),
      category: pick(categories),
      description,
      price: Math.round(random() * 50000) / 100
    }
  })
  const queries: Array<Query> = []
  for (let q = 0; q < queryCount - codeQueries; q++) {
    const target = Math.floor(random() * n)
    const p = products[target]!
    const descWords = p.description.toLowerCase().replace(/[.]/g, "").split(" ")
    const start = Math.floor(random() * Math.max(1, descWords.length - 4))
    const words = `${p.name.toLowerCase()} ${descWords.slice(start, start + 2 + Math.floor(random() * 3)).join(" ")}`
    queries.push({ text: pick(templates)(words), target, code: false })
  }
  for (let q = 0; q < codeQueries; q++) {
    const target = Math.floor(random() * n)
    queries.push({ text: products[target]!.sku, target, code: true })
  }
  return { products, queries }
}
