/**
 * The inbox's keys, outside text fields: j/k move the selection, Enter opens it, e hands the open conversation back.
 */
import { useEffect } from "preact/hooks"
import { api } from "./api.js"
import { refreshOne, rows, selected } from "./inboxStore.js"
import { fail, navigate, route, say } from "./state.js"

const typingInField = (target: EventTarget | null) =>
  target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))

export const useKeys = () =>
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typingInField(e.target)) return
      if (route.value.page !== "inbox") return
      const list = rows.value
      if (
        e.key === "j" || e.key === "ArrowDown" && (e.target as HTMLElement | null)?.getAttribute("role") === "listbox"
      ) {
        selected.value = Math.min(list.length - 1, selected.value + 1)
      } else if (
        e.key === "k" || e.key === "ArrowUp" && (e.target as HTMLElement | null)?.getAttribute("role") === "listbox"
      ) {
        selected.value = Math.max(0, selected.value - 1)
      } else if (
        e.key === "Enter" &&
        (e.target === document.body || (e.target as HTMLElement | null)?.getAttribute("role") === "listbox")
      ) {
        const c = list[selected.value]
        if (c === undefined) return
        navigate({ page: "inbox", conversationId: c.id })
      } else if (e.key === "e") {
        const r = route.value
        const id = r.page === "inbox" ? r.conversationId : undefined
        if (id === undefined) return
        api("POST", `conversations/${id}/handoff`, { json: { action: "return" } })
          .then(() => (say("Handed back to the AI"), refreshOne(id)), fail)
      } else return
      e.preventDefault()
    }
    addEventListener("keydown", onKey)
    return () => removeEventListener("keydown", onKey)
  }, [])
