/**
 * The XML parts of office files, read with htmlparser2 in its XML mode (entities, character references and CDATA
 * decoded by the parser, not by a regex) as a stream of elements: a DOM of a large sheet costs several times the
 * sheet's size in memory and time, a stream only what the reader keeps. Elements are named by their local names, so a
 * file that binds the OOXML namespaces to other prefixes reads the same.
 */
import { Parser } from "htmlparser2"

export type Attributes = Record<string, string>

export interface XmlHandlers {
  readonly open?: (name: string, attributes: Attributes) => void
  readonly text?: (text: string) => void
  readonly close?: (name: string) => void
}

const local = (name: string) => name.slice(name.indexOf(":") + 1)

/** Streams an XML part's elements and text to `handlers` (text may come in several pieces). */
export const streamXml = (xml: string, handlers: XmlHandlers): void => {
  new Parser({
    onopentag: (name, attributes) => handlers.open?.(local(name), attributes),
    ontext: (text) => handlers.text?.(text),
    onclosetag: (name) => handlers.close?.(local(name))
  }, { xmlMode: true }).end(xml)
}

/** The attributes of every element named `name`, in document order. */
export const elementsNamed = (xml: string, name: string): Array<Attributes> => {
  const out: Array<Attributes> = []
  streamXml(xml, { open: (element, attributes) => element === name && out.push(attributes) })
  return out
}

/** A relationship id attribute (`r:id`), whatever prefix the file binds the relationships namespace to. */
export const relationshipId = (attributes: Attributes): string | undefined =>
  Object.entries(attributes).find(([key]) => key.endsWith(":id"))?.[1]

/** The targets of a relationships part by their ids, as zip paths resolved against the folder `base`. */
export const relationships = (xml: string | undefined, base: string): Map<string, string> => {
  const out = new Map<string, string>()
  for (const { Id, Target, TargetMode } of elementsNamed(xml ?? "", "Relationship")) {
    if (Id === undefined || Target === undefined || TargetMode === "External") continue
    const parts = Target.startsWith("/") ? [] : base.split("/").filter((p) => p !== "")
    for (const part of Target.split("/")) {
      if (part === "..") parts.pop()
      else if (part !== "." && part !== "") parts.push(part)
    }
    out.set(Id, parts.join("/"))
  }
  return out
}
