/**
 * A site's robots.txt as RFC 9309 reads it: the groups naming our product token (else the `*` groups) give Allow and
 * Disallow rules; the longest rule matching a URL's path and query decides, Allow winning a tie; `*` matches any
 * run of characters and a final `$` the end. /robots.txt itself is always allowed.
 */
export interface Robots {
  readonly allows: (url: string) => boolean
}

interface Rule {
  readonly allow: boolean
  readonly length: number
  readonly pattern: RegExp
}

const ruleOf = (allow: boolean, path: string): Rule => {
  const anchored = path.endsWith("$")
  const body = (anchored ? path.slice(0, -1) : path).split("*").map((part) =>
    part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")
  ).join(".*")
  return { allow, length: path.length, pattern: new RegExp(`^${body}${anchored ? "$" : ""}`) }
}

/** The rules of `text` for `agent` (its product token, matched without case). */
export const robotsFrom = (text: string, agent: string): Robots => {
  const token = agent.toLowerCase()
  const groups: Array<{ agents: Array<string>; rules: Array<Rule> }> = []
  let current: { agents: Array<string>; rules: Array<Rule> } | null = null
  for (const raw of text.split(/\r\n|\r|\n/)) {
    const line = raw.replace(/#.*$/, "").trim()
    const colon = line.indexOf(":")
    if (colon < 0) continue
    const key = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    if (key === "user-agent") {
      // consecutive user-agent lines share one group; one after rules starts another
      if (current === null || current.rules.length > 0) {
        current = { agents: [], rules: [] }
        groups.push(current)
      }
      current.agents.push(value.toLowerCase())
    } else if ((key === "allow" || key === "disallow") && current !== null && value !== "") {
      current.rules.push(ruleOf(key === "allow", value))
    }
  }
  const ours = groups.filter((g) => g.agents.some((a) => a.split("/")[0]!.trim() === token))
  const rules = (ours.length > 0 ? ours : groups.filter((g) => g.agents.includes("*"))).flatMap((g) => g.rules)
  return {
    allows: (url) => {
      const target = new URL(url)
      const path = target.pathname + target.search
      if (target.pathname === "/robots.txt") return true
      let best: Rule | undefined
      for (const rule of rules) {
        if (!rule.pattern.test(path)) continue
        if (best === undefined || rule.length > best.length || (rule.length === best.length && rule.allow)) best = rule
      }
      return best?.allow ?? true
    }
  }
}
