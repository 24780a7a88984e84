/** A mailbox: its address with IMAP for reading and SMTP for answering, or the simulator (docs/channels.md, "Email"). */
import { ConnectFrame, field, type FieldSpec, submit } from "./ChannelForm.js"

/**
 * A mailbox: its address and IMAP and SMTP logins (TLS on ports 993 and 465, STARTTLS otherwise; the logins default
 * to the address), or the simulator.
 */
const connectEmail = submit("email", "Email", (form) => {
  if (form.get("simulator") === "on") return { simulator: true }
  const address = field(form, "address") ?? ""
  const server = (p: "imap" | "smtp") => {
    const port = Number(field(form, `${p}_port`) ?? (p === "imap" ? 993 : 465))
    return {
      host: field(form, `${p}_host`) ?? "",
      port,
      secure: port === 993 || port === 465,
      user: field(form, `${p}_user`) ?? address,
      password: field(form, `${p}_password`) ?? ""
    }
  }
  return { address, imap: server("imap"), smtp: server("smtp") }
})

export const ConnectEmail = () => (
  <ConnectFrame
    kind="email"
    title="Connect a mailbox"
    hint="The mailbox's address and its IMAP and SMTP servers (from your mail provider's settings; TLS on ports 993 and 465, STARTTLS otherwise). Parley reads the INBOX and answers from this address. Or try it first with the simulator: no mail server needed."
    name="Email"
    instead="a mail server"
    onSubmit={connectEmail}
    fields={[
      { label: "Address", name: "address", type: "email", placeholder: "support@example.com" },
      ...(["imap", "smtp"] as const).flatMap((p): ReadonlyArray<FieldSpec> => {
        const upper = p.toUpperCase()
        return [
          { label: `${upper} server`, name: `${p}_host`, type: "text", placeholder: `${p}.example.com` },
          { label: `${upper} port`, name: `${p}_port`, numeric: true, placeholder: p === "imap" ? "993" : "465" },
          { label: `${upper} login (if not the address)`, name: `${p}_user`, type: "text" },
          { label: `${upper} password`, name: `${p}_password`, secret: true }
        ]
      })
    ]}
  />
)
