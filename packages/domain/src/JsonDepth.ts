/**
 * How deeply JSON may nest. Nothing Parley takes nests more than a few levels; very deep values exhaust
 * the stack of whatever walks them (a decoder's error message prints the value it refused).
 */
export const MAX_JSON_DEPTH = 64

/** Whether JSON text nests deeper than `max` arrays and objects (a scan of the text, strings skipped). */
export const jsonNestsDeeperThan = (text: string, max = MAX_JSON_DEPTH): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--
  }
  return false
}

export const tooDeepMessage =
  `The request body may not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`
