/** A mailbox: its address with IMAP for reading and SMTP for answering, or the simulator (docs/channels.md, "Email"). */
import { field, PipelineSelect, Problems, submit } from "./ChannelForm.js"

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
  <form class="connect" onSubmit={connectEmail} aria-labelledby="connect-email-title">
    <h3 id="connect-email-title">Connect a mailbox</h3>
    <p class="hint">
      The mailbox's address and its IMAP and SMTP servers (from your mail provider's settings; TLS on ports 993 and 465,
      STARTTLS otherwise). Parley reads the INBOX and answers from this address. Or try it first with the simulator: no
      mail server needed.
    </p>
    <label>
      Name <input name="name" placeholder="Email" />
    </label>
    <PipelineSelect />
    <label class="inline">
      <input type="checkbox" name="simulator" /> Use the simulator instead of a mail server
    </label>
    <label>
      Address <input name="address" type="email" autoComplete="off" placeholder="support@example.com" />
    </label>
    <label>
      IMAP server <input name="imap_host" autoComplete="off" placeholder="imap.example.com" />
    </label>
    <label>
      IMAP port <input name="imap_port" inputMode="numeric" placeholder="993" />
    </label>
    <label>
      IMAP login (if not the address) <input name="imap_user" autoComplete="off" />
    </label>
    <label>
      IMAP password <input name="imap_password" type="password" autoComplete="off" />
    </label>
    <label>
      SMTP server <input name="smtp_host" autoComplete="off" placeholder="smtp.example.com" />
    </label>
    <label>
      SMTP port <input name="smtp_port" inputMode="numeric" placeholder="465" />
    </label>
    <label>
      SMTP login (if not the address) <input name="smtp_user" autoComplete="off" />
    </label>
    <label>
      SMTP password <input name="smtp_password" type="password" autoComplete="off" />
    </label>
    <Problems kind="email" />
    <button type="submit">Connect</button>
  </form>
)
